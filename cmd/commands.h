/*
 * The subcommand table: XIP_COMMAND(name, summary).  Each name has an
 * entry point int cmd_<name>(int argc, const char **argv) in cmd/.
 */
XIP_COMMAND(info, "show what an image holds and whether it is XIP-capable")
