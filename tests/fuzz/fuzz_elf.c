// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "elf": the ELF parser on the input, in memory, through a
 * file descriptor and through a read callback that returns short reads,
 * then the loadability checks for several page sizes and the per-segment
 * alignment helpers.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "exec/xip_elf.h"

struct short_ctx {
	const uint8_t *data;
	size_t size;
	size_t chunk;
};

/* A reader that hands out at most @chunk bytes per call. */
static ssize_t short_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	const struct short_ctx *c = ctx;

	if (off >= c->size)
		return 0;
	if (len > c->size - off)
		len = c->size - off;
	if (len > c->chunk)
		len = c->chunk;
	memcpy(buf, c->data + off, len);
	return (ssize_t)len;
}

static void fuzz_analyse(struct xip_elf *elf)
{
	static const unsigned int pages[] = { 0, 4096, 16384, 65536 };

	xip_elf_machine_name(elf->machine);
	for (size_t p = 0; p < sizeof(pages) / sizeof(pages[0]); p++) {
		for (size_t i = 0; i < elf->nload; i++)
			xip_elf_load_congruent(&elf->load[i],
					       pages[p] ? pages[p] : 4096);
		xip_elf_validate_load(elf, "fuzz.elf", pages[p]);
	}
}

static void fuzz_parse_fd(const uint8_t *data, size_t size)
{
	struct xip_elf elf;
	int fd = memfd_create("fuzz.elf", MFD_CLOEXEC);

	if (fd < 0)
		return;
	if (write(fd, data, size) == (ssize_t)size &&
	    !xip_elf_parse_fd(fd, "fuzz.elf", &elf))
		xip_elf_free(&elf);
	close(fd);
}

FUZZ_TARGET(elf)
{
	struct short_ctx c = { data, size, 0 };
	struct xip_elf elf;

	if (!xip_elf_parse_buf(data, size, "fuzz.elf", &elf)) {
		fuzz_analyse(&elf);
		xip_elf_free(&elf);
	}
	/* the chunk size comes from the last byte: 1..256 */
	c.chunk = size ? (size_t)data[size - 1] + 1 : 1;
	if (!xip_elf_parse(short_read, &c, size, "fuzz.elf", &elf))
		xip_elf_free(&elf);
	fuzz_parse_fd(data, size);
	return 0;
}
