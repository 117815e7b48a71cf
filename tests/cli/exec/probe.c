/*
 * A test program for xiptool exec, built during the tests as static,
 * static-pie, dynamic PIE and non-PIE.  Run natively or through the
 * loader, it prints what it sees.  Usage: probe MODE [ARG...]
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
extern void _start(void);

static __thread int tls_value = 7;

/* The stack pointer in main's frame: the ABI keeps it 16-byte aligned. */
static __attribute__((noinline)) uintptr_t stack_at_main(void)
{
	return (uintptr_t)__builtin_frame_address(0);
}

static void aux(void)
{
	const uint8_t *r = (const uint8_t *)getauxval(AT_RANDOM);
	uintptr_t phdr = getauxval(AT_PHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(phdr - 64);

	printf("entry-ok %d\n", getauxval(AT_ENTRY) == (uintptr_t)_start);
	/* the ELF header sits just before the program headers */
	printf("phdr-ok %d\n", !memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
	       eh->e_phoff == 64 && getauxval(AT_PHNUM) == eh->e_phnum &&
	       getauxval(AT_PHENT) == sizeof(Elf64_Phdr));
	printf("base %s\n", getauxval(AT_BASE) ? "nonzero" : "zero");
	printf("execfn %s\n", (const char *)getauxval(AT_EXECFN));
	printf("pagesz %lu\n", getauxval(AT_PAGESZ));
	printf("secure %lu\n", getauxval(AT_SECURE));
	printf("uid-ok %d\n", getauxval(AT_UID) == getuid() &&
	       getauxval(AT_EGID) == getegid());
	printf("hwcap-ok %d\n", getauxval(AT_HWCAP) != 0);
	printf("hwcap %lx hwcap2 %lx\n", getauxval(AT_HWCAP),
	       getauxval(AT_HWCAP2));
	printf("sp-align %d\n", (int)(stack_at_main() & 15));
	printf("platform %s\n", (const char *)getauxval(AT_PLATFORM));
	printf("sysinfo %s\n", getauxval(AT_SYSINFO_EHDR) ? "yes" : "no");
	printf("random ");
	for (int i = 0; i < 16; i++)
		printf("%02x", r[i]);
	printf("\n");
}

static int base_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	if (strstr(info->dlpi_name, "ld-linux"))
		*(uintptr_t *)data = info->dlpi_addr;
	return 0;
}

/* AT_BASE must be where the dynamic linker really is. */
static void interp_base(void)
{
	uintptr_t ld = 0;

	dl_iterate_phdr(base_cb, &ld);
	printf("base-ok %d\n", ld == getauxval(AT_BASE));
}

/* Which file and offset back the page of main(), and any rwx mapping. */
static void maps(void)
{
	uintptr_t text = (uintptr_t)&maps, lo, hi;
	uintptr_t execfn = getauxval(AT_EXECFN);
	unsigned long off;
	char line[1024], perms[8], path[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int rwx = 0;

	while (fgets(line, sizeof(line), f)) {
		path[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %511s", &lo, &hi,
			   perms, &off, path) < 4)
			continue;
		if (!strcmp(perms, "rwxp") || !strcmp(perms, "rwxs"))
			rwx++;
		if (lo <= getauxval(AT_BASE) && getauxval(AT_BASE) < hi)
			printf("interp-map %s %lu\n", path, off);
		if (lo <= text && text < hi)
			printf("text-map %s %lu %s\n", path,
			       (unsigned long)(off + ((text & ~4095UL) - lo)),
			       perms);
		/* execve(2) puts the file name at the top of [stack] */
		if (lo <= execfn && execfn < hi)
			printf("stack-top-gap %lu\n", (unsigned long)
			       (hi - execfn - strlen((const char *)execfn) - 1));
	}
	fclose(f);
	printf("rwx %d\n", rwx);
}

/* The file page of main()'s page, from our own program headers. */
static void text_page(void)
{
	const Elf64_Phdr *ph = (const Elf64_Phdr *)getauxval(AT_PHDR);
	uintptr_t text = (uintptr_t)&maps & ~4095UL, bias = 0;
	size_t n = getauxval(AT_PHNUM);

	/* the PT_LOAD holding the headers (at file offset 64) */
	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset <= 64 &&
		    64 < ph[i].p_offset + ph[i].p_filesz)
			bias = getauxval(AT_PHDR) -
			       (64 - ph[i].p_offset + ph[i].p_vaddr);
	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && text >= bias + ph[i].p_vaddr &&
		    text < bias + ph[i].p_vaddr + ph[i].p_memsz)
			printf("text-page %lu\n", (unsigned long)
			       ((text - bias - ph[i].p_vaddr + ph[i].p_offset) /
				4096));
}

static void args(int argc, char **argv)
{
	char buf[1 << 16];
	FILE *f = fopen("/proc/self/cmdline", "r");
	size_t n = fread(buf, 1, sizeof(buf), f), k = 0;

	fclose(f);
	printf("argc %d\n", argc);
	for (int i = 0; i < argc; i++)
		printf("argv[%d] %zu <%s>\n", i, strlen(argv[i]), argv[i]);
	for (char **e = environ; *e; e++)
		printf("env <%s>\n", *e);
	for (size_t i = 0; i < n; i++)
		k += buf[i] == '\0';
	printf("cmdline-args %zu\n", k);
}

static void *worker(void *arg)
{
	long sum = 0;

	tls_value = (int)(intptr_t)arg;
	for (long i = 0; i < 100000; i++)
		sum += i % 7;
	return (void *)(intptr_t)(tls_value * 1000 + (sum > 0));
}

static void threads(void)
{
	pthread_t t[4];
	int ok = 1;

	for (intptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (intptr_t i = 0; i < 4; i++) {
		void *r;

		pthread_join(t[i], &r);
		ok &= (intptr_t)r == (i + 1) * 1000 + 1;
	}
	printf("threads-ok %d tls %d\n", ok, tls_value);
}

static void forks(void)
{
	int st;
	pid_t p = fork();

	if (p == 0)
		_exit(42);
	waitpid(p, &st, 0);
	printf("fork-wait %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	fflush(stdout);
	p = fork();
	if (p == 0) {
		execl("/bin/sh", "sh", "-c", "echo exec-child; exit 3", NULL);
		_exit(99);
	}
	waitpid(p, &st, 0);
	printf("fork-exec %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

__attribute__((noinline)) static void smash(const char *s)
{
	char buf[8];

	strcpy(buf, s);
	printf("%s\n", buf);
}

/* Use @kib KiB of stack, a page at a time, then report the depth. */
__attribute__((noinline)) static unsigned long deep(unsigned long kib)
{
	volatile char page[4096];

	page[0] = (char)kib;
	if (kib <= 4)
		return 4;
	return deep(kib - 4) + 4 + (unsigned long)(page[0] & 0);
}

static void bye(void)
{
	printf("atexit-ran\n");
}

/*
 * The process state execve(2) decides: each signal's disposition (caught
 * ones printed as "handler", which execve resets), the blocked mask, the
 * alternate signal stack and the open descriptors with their flags.
 */
static void state(void)
{
	sigset_t blocked;
	stack_t ss;

	sigprocmask(SIG_BLOCK, NULL, &blocked);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sigaction(sig, NULL, &sa))
			continue;
		printf("sig %d %s%s\n", sig,
		       sa.sa_handler == SIG_DFL ? "default" :
		       sa.sa_handler == SIG_IGN ? "ignored" : "handler",
		       sigismember(&blocked, sig) ? " blocked" : "");
	}
	if (sigaltstack(NULL, &ss) == 0)
		printf("altstack %s\n", (ss.ss_flags & SS_DISABLE) ?
		       "disabled" : "enabled");
	for (int fd = 0; fd < 4096; fd++) {
		int fl = fcntl(fd, F_GETFD);

		if (fl >= 0)
			printf("fd %d%s flags %o\n", fd,
			       (fl & FD_CLOEXEC) ? " cloexec" : "",
			       fcntl(fd, F_GETFL));
	}
}

/*
 * Where the kernel started our heap (start_brk, field 47 of
 * /proc/self/stat), as bytes past the page-aligned end of our bss.
 */
static void brk_gap(void)
{
	extern char _end[];
	unsigned long start_brk = 0, page = getauxval(AT_PAGESZ);
	char buf[4096], *p;
	FILE *f = fopen("/proc/self/stat", "r");
	int field = 2;

	if (!f || !fgets(buf, sizeof(buf), f)) {
		perror("/proc/self/stat");
		exit(1);
	}
	fclose(f);
	p = strrchr(buf, ')');	/* comm may hold spaces */
	for (p = p ? p + 1 : buf; *p && field < 47; p++)
		if (*p == ' ')
			field++;
	start_brk = strtoul(p, NULL, 10);
	printf("brk-gap %ld\n", (long)(start_brk -
		((uintptr_t)_end + page - 1) / page * page));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "aux";

	if (!strcmp(mode, "state")) {
		state();
		return 0;
	} else if (!strcmp(mode, "aux")) {
		aux();
		interp_base();
	} else if (!strcmp(mode, "maps")) {
		maps();
		text_page();
	} else if (!strcmp(mode, "args")) {
		args(argc, argv);
	} else if (!strcmp(mode, "exit")) {
		return atoi(argv[2]);
	} else if (!strcmp(mode, "signal")) {
		signal(atoi(argv[2]), SIG_DFL);
		raise(atoi(argv[2]));
	} else if (!strcmp(mode, "threads")) {
		threads();
	} else if (!strcmp(mode, "fork")) {
		forks();
	} else if (!strcmp(mode, "smash")) {
		smash(argv[2]);
	} else if (!strcmp(mode, "stack")) {
		printf("stack-used %lu\n", deep(strtoul(argv[2], NULL, 10)));
	} else if (!strcmp(mode, "self") && argc > 3) {
		/* run our own file again as NAME MODE ARG... (busybox's way) */
		execv("/proc/self/exe", argv + 2);
		perror("/proc/self/exe");
		return 99;
	} else if (!strcmp(mode, "brk")) {
		brk_gap();
	} else if (!strcmp(mode, "atexit")) {
		atexit(bye);
		printf("no newline, buffered");
		return 5;
	}
	return 0;
}
