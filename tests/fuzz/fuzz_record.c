// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "record": the text of a registry record, as every command
 * naming @NAME (and every start of `xiptool exec`) reads it from the run
 * directory: xip_registry_parse() and the brief read that opening a
 * segment does.  A record that parses must be written back by
 * xip_registry_format() as a record that parses to the same text again.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "registry/registry_int.h"

/* registry.c reads at most STATE_MAX - 1 bytes of a record */
#define RECORD_MAX 32768

static void round_trip(const struct xip_seg_entry *e)
{
	static char text[RECORD_MAX], again[RECORD_MAX];
	static struct xip_seg_entry e2;
	int n, m;

	n = xip_registry_format(e, text, sizeof(text));
	if (n < 0)
		return;		/* too long to write: refused, not mangled */
	if (xip_registry_parse(text, &e2))
		abort();	/* written, but not read back */
	m = xip_registry_format(&e2, again, sizeof(again));
	if (m != n || memcmp(text, again, (size_t)n))
		abort();	/* read back as another record */
}

FUZZ_TARGET(record)
{
	static struct xip_seg_entry e, brief;
	char *text;

	if (size >= RECORD_MAX)
		size = RECORD_MAX - 1;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (!xip_registry_parse(text, &e))
		round_trip(&e);
	memset(&brief, 0, sizeof(brief));
	xip_registry_parse_brief(text, &brief);
	xip_error_clear();
	free(text);
	return 0;
}
