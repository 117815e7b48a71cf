# Shared by the fuzz test scripts (sourced, POSIX sh).

top_src=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
top_build=${TOP_BUILDDIR:-$top_src}
fuzz_src=$top_src/tests/fuzz
fuzz_build=$top_build/tests/fuzz

# fuzz_kinds TARGET: the seed corpora a target takes (seeds/KIND/)
fuzz_kinds() {
	case $1 in
	elf*) echo elf ;;
	align*) echo ext2 ;;
	exec*) echo elf ext2 ;;
	oci*) echo oci ;;
	tar*) echo tar ;;
	record*) echo record ;;
	verity*) echo verity ;;
	vsig*) echo vsig ;;
	regauth*) echo regauth ;;
	*) echo ext2 ;;
	esac
}

# fuzz_dict TARGET: its dictionary
fuzz_dict() {
	case $1 in
	elf* | align* | exec*) echo "$fuzz_src/elf.dict" ;;
	oci*) echo "$fuzz_src/oci.dict" ;;
	tar*) echo "$fuzz_src/tar.dict" ;;
	record*) echo "$fuzz_src/record.dict" ;;
	verity*) echo "$fuzz_src/verity.dict" ;;
	vsig*) echo "$fuzz_src/vsig.dict" ;;
	regauth*) echo "$fuzz_src/regauth.dict" ;;
	*) echo "$fuzz_src/ext2.dict" ;;
	esac
}

# fuzz_seed_dirs TARGET: the directories of its seeds
fuzz_seed_dirs() {
	for k in $(fuzz_kinds "$1"); do
		printf '%s\n' "$fuzz_build/seeds/$k"
	done
}

# fuzz_regress TARGET OUTDIR: write the regression inputs of TARGET
# (tests/fuzz/regress/TARGET/NAME.hex as `xxd -a` dumps, NAME.sh as
# generators called with the output path) as files in OUTDIR.
fuzz_regress() {
	mkdir -p "$2"
	for f in "$fuzz_src/regress/$1"/*; do
		[ -e "$f" ] || continue
		b=$(basename "$f")
		case $b in
		*.hex) xxd -r "$f" "$2/${b%.hex}" || return 1 ;;
		*.sh) sh "$f" "$2/${b%.sh}" || return 1 ;;
		esac
	done
}

# tap_log FILE: the tail of FILE as TAP comments
tap_log() {
	tail -n "${2:-40}" "$1" | sed 's/^/# /'
}
