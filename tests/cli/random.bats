#!/usr/bin/env bats
# A fixed-seed random sequence of writes and truncates across holes and
# block-map boundaries, against a model file on the host; e2fsck, debugfs
# and the kernel check the image along the way.

load ../lib/common

run_ops() {
	python3 - "$XIPTOOL" "$T/img" "$T/model" "$1" "$2" "$TOP_SRCDIR/tests/lib/blockmap.py" <<'PY'
import os, random, subprocess, sys
xiptool, img, model, seed, nops, blockmap = sys.argv[1:7]
rnd = random.Random(int(seed))
BS = 4096
# offsets around the direct/indirect/double-indirect boundaries
hot = [0, 12 * BS, 1036 * BS, 1037 * BS, 2060 * BS]
def pick_off():
    r = rnd.random()
    if r < 0.5:
        return max(0, rnd.choice(hot) + rnd.randint(-2 * BS, 2 * BS))
    return rnd.randint(0, 9 << 20)
def check(i, what):
    got = subprocess.run([xiptool, "read", img, "/f"], capture_output=True)
    if got.returncode != 0:
        sys.exit("op %d (%s): read failed: %s" % (i, what, got.stderr))
    with open(model, "rb") as m:
        want = m.read()
    if got.stdout != want:
        n = next((k for k in range(min(len(want), len(got.stdout)))
                  if want[k] != got.stdout[k]), None)
        sys.exit("op %d (%s): content differs (sizes %d/%d, first diff %s)"
                 % (i, what, len(got.stdout), len(want), n))
def blocks(i, what):
    r = subprocess.run([sys.executable, blockmap, xiptool, img, "/f"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("op %d (%s): %s" % (i, what, r.stderr or r.stdout))
def fsck(i, what):
    r = subprocess.run(["e2fsck", "-fn", img], capture_output=True)
    if r.returncode != 0:
        sys.exit("op %d (%s): e2fsck: %s" % (i, what, r.stdout.decode()[-2000:]))
for i in range(int(nops)):
    if rnd.random() < 0.7:
        off = pick_off()
        n = rnd.choice([1, rnd.randint(1, BS), rnd.randint(1, 4 * BS),
                        rnd.randint(1, 300000)])
        data = rnd.randbytes(n)
        what = "write %d@%d" % (n, off)
        r = subprocess.run([xiptool, "write", "--offset", str(off), img, "/f"],
                           input=data, capture_output=True)
        if r.returncode != 0:
            sys.exit("op %d (%s): %s" % (i, what, r.stderr))
        with open(model, "r+b") as m:
            m.seek(off)
            m.write(data)
    else:
        size = rnd.choice([0, pick_off(), pick_off() + rnd.randint(0, BS)])
        what = "truncate %d" % size
        r = subprocess.run([xiptool, "truncate", img, "/f", str(size)],
                           capture_output=True)
        if r.returncode != 0:
            sys.exit("op %d (%s): %s" % (i, what, r.stderr))
        os.truncate(model, size)
    if i % 10 == 9:
        check(i, what)
        blocks(i, what)
    if i % 40 == 39:
        fsck(i, what)
check(i, what)
fsck(i, what)
PY
}

@test "300 random writes and truncates match a model file; e2fsck clean" {
	require_cmd python3
	mkimg "$T/img" 48M
	: > "$T/model"
	printf '' | xiptool write --create "$T/img" /f
	run_ops 20261203 300
	# the peers agree with the model at the end
	debugfs -R "cat /f" "$T/img" 2>/dev/null | cmp - "$T/model"
	# every block the file holds is one mapped page or a mapped indirect
	# block: xiptool's block map is debugfs's, block for block, and the
	# inode counts exactly those blocks (checked every 10 operations too)
	run xiptool stat "$T/img" /f
	[ "$(info_field "$output" Size)" = "$(stat -c %s "$T/model")" ]
	python3 "$TOP_SRCDIR/tests/lib/blockmap.py" "$XIPTOOL" "$T/img" /f
}

@test "the kernel (ext2 and ext4 drivers) reads what the model holds after random ops" {
	require_cmd python3
	require_loop
	mkimg "$T/img" 48M
	: > "$T/model"
	printf '' | xiptool write --create "$T/img" /f
	run_ops 7 80
	for drv in ext2 ext4; do
		loop_mount "$T/img" "$drv"
		cmp "$T/mnt/f" "$T/model"
		loop_umount
	done
}

@test "random ops on an extent-mapped file of an ext4 image match the model; e2fsck clean" {
	require_cmd python3
	mkdir -p "$T/tree"
	head -c 100000 /dev/urandom > "$T/tree/f"
	cp "$T/tree/f" "$T/model"
	mke2fs -q -F -t ext4 -b 4096 -d "$T/tree" "$T/img" 48M
	run xiptool stat "$T/img" /f
	[[ "$output" == *"Extents:"*yes* ]]
	run_ops 4242 100
	debugfs -R "cat /f" "$T/img" 2>/dev/null | cmp - "$T/model"
	if [ "$(id -u)" -eq 0 ] && [ -e /dev/loop-control ]; then
		loop_mount "$T/img" ext4
		cmp "$T/mnt/f" "$T/model"
		loop_umount
	fi
}
