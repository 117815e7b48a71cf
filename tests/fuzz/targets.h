/*
 * The fuzz targets, one line each: XIP_FUZZ_TARGET(name) for
 * tests/fuzz/fuzz_<name>.c, which defines fuzz_target_<name>().
 */
XIP_FUZZ_TARGET(image)
XIP_FUZZ_TARGET(elf)
XIP_FUZZ_TARGET(file)
XIP_FUZZ_TARGET(verify)
XIP_FUZZ_TARGET(write)
XIP_FUZZ_TARGET(exec)
XIP_FUZZ_TARGET(align)
XIP_FUZZ_TARGET(oci)
XIP_FUZZ_TARGET(tar)
XIP_FUZZ_TARGET(record)
XIP_FUZZ_TARGET(verity)
XIP_FUZZ_TARGET(vsig)
XIP_FUZZ_TARGET(regauth)
