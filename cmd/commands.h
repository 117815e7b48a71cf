/*
 * The subcommand table: XIP_COMMAND(ident, "name", "summary").  Each entry
 * has an entry point int cmd_<ident>(int argc, const char **argv) in cmd/,
 * a man page man/xiptool-<name>.1, a bats file tests/cli/<name>.bats and
 * completion entries.  Keep the list in alphabetical order.
 */
XIP_COMMAND(info, "info", "show what an image holds and whether it is XIP-capable")
