# The large program of the exec tests and benchmarks: a static program
# with 64 MiB of text (a `ret` at the start of each 4 KiB page, each called
# once), linked with -z max-page-size=0x200000 so that its PT_LOADs are
# congruent to 2 MiB.  The linker pads between them with zeros it leaves
# as holes.  With an argument it prints "ready" after touching its text,
# and waits (pause).
#   make_bigprog OUT [TEXT_MIB]

make_bigprog() {
	local out=$1 mib=${2:-64} src
	src=$(mktemp "${TMPDIR:-/tmp}/bigprog.XXXXXX.c")
	cat > "$src" <<EOC
extern const char big_text[], big_text_end[];
__asm__(".section .text.big,\"ax\",@progbits\n"
	".globl big_text\nbig_text:\n"
	".fill $((mib << 20)),1,0xc3\n"
	".globl big_text_end\nbig_text_end:\n.previous\n");
#include <unistd.h>
int main(int argc, char **argv)
{
	for (const char *p = big_text; p < big_text_end; p += 4096)
		((void (*)(void))p)();
	if (argc > 1) {		/* "wait": stay, for /proc/PID/smaps */
		write(1, "ready\\n", 6);
		pause();
	}
	return 0;
}
EOC
	gcc -O2 -static -Wl,-z,max-page-size=0x200000 -o "$out" "$src" ||
		{ rm -f "$src"; return 1; }
	rm -f "$src"
}

# hugepages_reserve N: at least N free 2 MiB huge pages, the old
# vm.nr_hugepages kept in $T/nr_hugepages for hugepages_restore.
hugepages_reserve() {
	local old free
	old=$(cat /proc/sys/vm/nr_hugepages)
	[ -f "$T/nr_hugepages" ] || echo "$old" > "$T/nr_hugepages"
	echo $((old + $1)) > /proc/sys/vm/nr_hugepages 2>/dev/null || return 1
	free=$(awk '/^HugePages_Free/ { print $2 }' /proc/meminfo)
	[ "$free" -ge "$1" ]
}

hugepages_restore() {
	if [ -f "${T:-}/nr_hugepages" ]; then
		cat "$T/nr_hugepages" > /proc/sys/vm/nr_hugepages
		rm -f "$T/nr_hugepages"
	fi
}

# pmd_kib PID FILE OUT: KiB of FILE that PID maps with 2 MiB entries (smaps
# FilePmdMapped, ShmemPmdMapped) once the program, whose output goes to
# OUT, says "ready" (at most 10 s), else 0
pmd_kib() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -qx ready "$3" 2>/dev/null && break
		sleep 0.1
	done
	awk -v f="$2" '
		/^[0-9a-f]+-[0-9a-f]+ / { m = ($6 == f) }
		m && /^(File|Shmem)PmdMapped:/ { s += $2 }
		END { print s + 0 }' "/proc/$1/smaps" 2>/dev/null || echo 0
}
