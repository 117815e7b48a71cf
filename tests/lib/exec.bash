# Helpers of the exec tests (exec.bats, exec-cross.bats).  Load after
# common.

# busybox_as_native BUSYBOX: /bin/busybox of $IMG run by xiptool exec
# prints and exits as BUSYBOX started by the kernel (echo, ls /, sh -c).
busybox_as_native() {
	local bb=$1
	run xiptool exec "$IMG" /bin/busybox echo hello "two  words" ''
	[ "$status" -eq 0 ]
	[ "$output" = "$("$bb" echo hello "two  words" '')" ]
	run xiptool exec "$IMG" /bin/busybox ls /
	[ "$status" -eq 0 ]
	[ "$output" = "$("$bb" ls /)" ]
	run xiptool exec "$IMG" /bin/busybox sh -c 'echo $#:$0:$1; exit 7' zero one
	[ "$status" -eq 7 ]
	[ "$output" = "1:zero:one" ]
}
