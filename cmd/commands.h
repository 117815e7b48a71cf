/*
 * The subcommand table: XIP_COMMAND(ident, "name", "summary").  Each entry
 * has an entry point int cmd_<ident>(int argc, const char **argv) in cmd/,
 * a man page man/xiptool-<name>.1, a bats file tests/cli/<name>.bats and
 * completion entries.  Keep the list in alphabetical order.
 */
XIP_COMMAND(align_check, "align-check", "check whether the ELF files of an image can run in place")
XIP_COMMAND(attach, "attach", "attach an image as a named memory segment")
XIP_COMMAND(detach, "detach", "release attached segments and their loop devices")
XIP_COMMAND(exec, "exec", "run a program mapped straight from an image")
XIP_COMMAND(extract, "extract", "write the tree of an image (or a subtree) out to a directory")
XIP_COMMAND(info, "info", "show what an image holds and whether it is XIP-capable")
XIP_COMMAND(list, "list", "list attached segments")
XIP_COMMAND(ls, "ls", "list a directory of an image")
XIP_COMMAND(mkfs, "mkfs", "build an ext2 XIP image from a directory tree")
XIP_COMMAND(ps, "ps", "list the processes that map attached segments, shared and copied pages")
XIP_COMMAND(push, "push", "push an image to an OCI registry as an artifact")
XIP_COMMAND(read, "read", "copy a file of an image to stdout, straight from the segment")
XIP_COMMAND(save, "save", "write an attached segment to an image file")
XIP_COMMAND(sign, "sign", "sign the root hash of a verity image (PKCS#7, after its tree)")
XIP_COMMAND(stat, "stat", "show an inode of an image: owner, size, times, block runs, holes")
XIP_COMMAND(truncate, "truncate", "set the size of a file of an image (frees blocks or leaves a hole)")
XIP_COMMAND(verify, "verify", "check the structure, XIP readiness and content of an image")
XIP_COMMAND(write, "write", "write stdin into a file of an image, in place")
