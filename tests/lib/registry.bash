# Registries for the mkfs --oci docker:// tests: the Debian docker-registry
# (the CNCF distribution registry) on a free loopback port, its storage in
# a directory of the test file, and the python peers of registry-peer.py.
# Load after ../lib/common.  Everything started is recorded in $RT/pids
# and stopped by reg_stop_all (teardown_file).

# A free TCP port on the loopback interface.
reg_free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# reg_start NAME [htpasswd] [tls] [accesslog]: a registry in $RT/NAME; its
# port in $RT/NAME/port.  htpasswd: basic auth of user:pass (bcrypt); tls:
# HTTPS with the self-signed certificate $RT/cert.pem (IP:127.0.0.1);
# accesslog: a line per request in $RT/NAME/log ("METHOD PATH HTTP/1.1").
reg_start() {
	local name=$1 dir=$RT/$1 port opt tries
	shift
	mkdir -p "$dir"
	for tries in 1 2 3; do
		port=$(reg_free_port)
		{
			echo "version: 0.1"
			if [[ " $* " == *" accesslog "* ]]; then
				echo "log: {level: error, accesslog: {disabled: false}}"
			else
				echo "log: {level: error, accesslog: {disabled: true}}"
			fi
			echo "storage: {filesystem: {rootdirectory: $dir/store}, delete: {enabled: true}}"
			echo "http:"
			echo "  addr: 127.0.0.1:$port"
			echo "  secret: test-secret"
			for opt in "$@"; do
				[ "$opt" = tls ] || continue
				echo "  tls: {certificate: $RT/cert.pem, key: $RT/key.pem}"
			done
			for opt in "$@"; do
				[ "$opt" = htpasswd ] || continue
				htpasswd -Bbn user pass > "$dir/htpasswd"
				echo "auth: {htpasswd: {realm: test, path: $dir/htpasswd}}"
			done
		} > "$dir/config.yml"
		docker-registry serve "$dir/config.yml" > "$dir/log" 2>&1 &
		echo $! >> "$RT/pids"
		if wait_until 10 reg_listening "$port"; then
			echo "$port" > "$dir/port"
			return 0
		fi
	done
	cat "$dir/log"
	return 1
}

reg_listening() {
	python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1" 2>/dev/null
}

# reg_cert: the self-signed certificate of 127.0.0.1 in $RT
reg_cert() {
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 \
		-keyout "$RT/key.pem" -out "$RT/cert.pem" 2>/dev/null
}

# reg_push LAYOUT:TAG PORT REPO:TAG [skopeo options]: push with skopeo
reg_push() {
	local src=$1 port=$2 dst=$3
	shift 3
	skopeo copy -q --dest-tls-verify=false "$@" "oci:$src" \
		"docker://127.0.0.1:$port/$dst"
}

# peer_start MODE NAME [options]: registry-peer.py MODE, its port on stdout
# (and in $T/NAME.port), its pid recorded for peer_stop_all
peer_start() {
	local mode=$1 name=$2
	shift 2
	python3 "$TOP_SRCDIR/tests/lib/registry-peer.py" "$mode" \
		--portfile "$T/$name.port" "$@" > "$T/$name.out" 2>&1 &
	echo $! >> "$T/peer-pids"
	wait_until 10 test -s "$T/$name.port" || { cat "$T/$name.out" >&2; return 1; }
	cat "$T/$name.port"
}

peer_stop_all() {
	local pid
	[ -f "$T/peer-pids" ] || return 0
	while read -r pid; do
		kill "$pid" 2>/dev/null || true
	done < "$T/peer-pids"
	rm -f "$T/peer-pids"
}

reg_stop_all() {
	local pid
	[ -f "$RT/pids" ] || return 0
	while read -r pid; do
		kill "$pid" 2>/dev/null || true
		wait_until 10 gone "$pid" || kill -9 "$pid" 2>/dev/null || true
	done < "$RT/pids"
	rm -f "$RT/pids"
}

# The blob file of DIGEST (sha256:HEX) in the registry NAME's storage
reg_blob_file() {
	local hex=${2#sha256:}
	echo "$RT/$1/store/docker/registry/v2/blobs/sha256/${hex:0:2}/$hex/data"
}

# layout_layers LAYOUT TAG: the digests of the layers of TAG, one a line
layout_layers() {
	python3 - "$1" "$2" <<-'EOF'
	import json, sys
	idx = json.load(open(sys.argv[1] + "/index.json"))
	for m in idx["manifests"]:
	    if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == sys.argv[2]:
	        man = json.load(open(sys.argv[1] + "/blobs/sha256/" + m["digest"][7:]))
	        for l in man["layers"]:
	            print(l["digest"])
	EOF
}
