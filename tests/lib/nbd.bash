# Helpers of the NBD tests: nbdkit servers with the xiptool plugin (or
# nbdkit's own plugins) on unix sockets below $T.  Load after common and
# attach:
#   load ../lib/common
#   load ../lib/attach
#   load ../lib/nbd
# Every server a test starts writes its pid to $T/NAME.pid; the teardown
# stops those and only those.

: "${TOP_BUILDDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PLUGIN=$TOP_BUILDDIR/nbdkit-xiptool-plugin.so

nbd_setup() {
	attach_setup
	mkdir -p "$T/shm"
	export XIPTOOL_SHMDIR=$T/shm
}

nbd_teardown() {
	local f pid i
	if [ -n "${T:-}" ]; then
		for f in "$T"/*.pid; do
			[ -f "$f" ] || continue
			pid=$(cat "$f")
			[ -n "$pid" ] || continue
			kill "$pid" 2>/dev/null || continue
			for i in $(seq 100); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
			kill -9 "$pid" 2>/dev/null || true
		done
		# loop devices a failed test left on its images
		for f in "$T"/img*; do
			[ -f "$f" ] || continue
			for pid in $(losetup -n -O NAME -j "$f" 2>/dev/null); do
				losetup -d "$pid" 2>/dev/null || true
			done
		done
	fi
	attach_teardown
}

setup() { nbd_setup; }
teardown() { nbd_teardown; }

require_plugin() {
	require_cmd nbdkit nbdinfo nbdcopy
	[ -f "$PLUGIN" ] || skip "the nbdkit plugin was not built (nbdkit-plugin-dev missing at configure time)"
}

# attach from NBD needs an xiptool built with libnbd.
require_pull() {
	require_plugin
	local out
	# the attach fails either way: its message says why
	out=$("$XIPTOOL" attach -n probe "nbd+unix:///?socket=$T/none.sock" 2>&1) || true
	if grep -q "built without libnbd" <<<"$out"; then
		skip "xiptool was built without libnbd"
	fi
}

# The URI of server NAME's socket.
nbd_uri() {
	echo "nbd+unix:///${2:-}?socket=$T/$1.sock"
}

# nbd_start NAME NBDKIT-ARGS...: start nbdkit in the foreground (-f) in
# the background of the test, on $T/NAME.sock, its log in $T/NAME.log;
# wait until it serves (its pid file appears).  Fails with the log when
# it exits first.
nbd_start() {
	local name=$1 i
	shift
	rm -f "$T/$name.sock" "$T/$name.pid"
	nbdkit -f -U "$T/$name.sock" --pidfile "$T/$name.pid" "$@" \
		</dev/null >"$T/$name.log" 2>&1 3>&- &
	echo $! >"$T/$name.bgpid"
	for i in $(seq 300); do
		[ -s "$T/$name.pid" ] && return 0
		kill -0 "$(cat "$T/$name.bgpid")" 2>/dev/null || break
		sleep 0.05
	done
	echo "nbdkit $name did not start:"
	cat "$T/$name.log"
	return 1
}

# Serve with the xiptool plugin: nbd_serve NAME PLUGIN-ARGS...
nbd_serve() {
	local name=$1
	shift
	nbd_start "$name" "$PLUGIN" "$@"
}

# Stop server NAME as an operator would (SIGTERM) and wait until it is gone.
nbd_stop() {
	local pid i
	pid=$(cat "$T/$1.pid")
	kill "$pid"
	if wait_until 10 gone "$pid"; then
		rm -f "$T/$1.pid"
		return 0
	fi
	echo "nbdkit $1 ($pid) did not stop"
	return 1
}

# A field of `nbdinfo --json` of a URI (the first export).
nbd_info_field() {
	nbdinfo --json "$1" | python3 -c 'import json, sys
d = json.load(sys.stdin)
e = d["exports"][0]
k = sys.argv[1]
print(json.dumps(e[k] if k in e else d[k]))' "$2"
}

# A free TCP port on the loopback interface (for the nbd:// form).
free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# stall_server NAME STEP: serve $T/img (nbdkit's file plugin, so that
# block status is answered) with the delay filter holding STEP for 5
# minutes: handshake (the export's open, during option negotiation),
# superblock (every read) or status (block status).  Verbose: its log
# shows each call the filter received (stall_events).
stall_server() {
	local d
	case $2 in
	handshake) d=delay-open=300 ;;
	superblock) d=delay-read=300 ;;
	status) d=delay-extents=300 ;;
	*) echo "stall_server: unknown step $2"; return 1 ;;
	esac
	nbd_start "$1" -v --filter=delay file "$T/img" "$d"
}

# stall_events NAME: how many requests of its step the stalling server
# NAME received (stall_server), or connections the mute one accepted.
stall_events() {
	case $1 in
	handshake) grep -c 'debug: delay: open ' "$T/$1.log" ;;
	superblock) grep -c 'debug: delay: pread ' "$T/$1.log" ;;
	status) grep -c 'debug: delay: extents ' "$T/$1.log" ;;
	mute) wc -l <"$T/m.accepted" ;;
	esac
}

# mute_server NAME: a unix socket on $T/NAME.sock that accepts and never
# says a word (not even the NBD greeting).
mute_server() {
	rm -f "$T/$1.sock"
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(4)
open(sys.argv[2], "w").write("ready")
conns = []
while True:
	conns.append(s.accept())
	with open(sys.argv[3], "a") as f:
		f.write("accepted\n")' "$T/$1.sock" "$T/$1.ready" "$T/$1.accepted" \
		</dev/null >/dev/null 2>&1 3>&- &
	echo $! >"$T/$1.pid"
	wait_until 5 test -s "$T/$1.ready" && return 0
	echo "mute server $1 did not start"
	return 1
}

# wait_exit PID SECONDS: wait for background job PID; its status in $rc.
# Fails (after killing it) when it is still running after SECONDS.
wait_exit() {
	local i
	wait_until "$2" gone "$1" || true
	if kill -0 "$1" 2>/dev/null; then
		kill -9 "$1"
		echo "process $1 still running after $2 s"
		return 1
	fi
	rc=0
	wait "$1" || rc=$?
}

# Nothing left of an attach of $SEG: no record, no segment file, and the
# name can be attached again at once.
nothing_left() {
	[ -z "$(ls -A "$T/shm")" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	[ -z "$(xiptool list --noheadings)" ]
	xiptool attach -n "$SEG" "$T/img"
	xiptool detach "$SEG"
}

# trickle_server NAME BACKEND FREE: a unix socket $T/NAME.sock in front of
# the NBD server socket BACKEND that passes the client's bytes at once and
# the server's first FREE bytes at once, then one byte every 0.1 s: a
# server that never stops sending and never finishes a reply.  Each byte
# trickled adds a line to $T/NAME.trickled.
trickle_server() {
	rm -f "$T/$1.sock" "$T/$1.trickled"
	: >"$T/$1.trickled"
	python3 -c 'import socket, sys, threading, time
path, backend, free, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def shut(*socks):
	for x in socks:
		try:
			x.shutdown(socket.SHUT_RDWR)
		except OSError:
			pass
def up(c, b):
	try:
		while True:
			d = c.recv(65536)
			if not d:
				break
			b.sendall(d)
	except OSError:
		pass
	shut(c, b)
def down(b, c):
	sent = 0
	try:
		while True:
			d = b.recv(65536)
			if not d:
				break
			while d:
				if sent < free:
					n = c.send(d[:free - sent])
				else:
					n = c.send(d[:1])
					with open(count, "a") as f:
						f.write("byte\n")
					time.sleep(0.1)
				sent += n
				d = d[n:]
	except OSError:
		pass
	shut(c, b)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
open(path + ".ready", "w").write("ready")
while True:
	c, _ = s.accept()
	b = socket.socket(socket.AF_UNIX)
	b.connect(backend)
	threading.Thread(target=up, args=(c, b), daemon=True).start()
	threading.Thread(target=down, args=(b, c), daemon=True).start()' \
		"$T/$1.sock" "$2" "$3" "$T/$1.trickled" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >"$T/$1.pid"
	wait_until 5 test -s "$T/$1.sock.ready" && return 0
	echo "trickle server $1 did not start"
	return 1
}
