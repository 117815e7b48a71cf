// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "vsig": the root hash signature block after a verity tree,
 * as info, attach --root-hash and the plugin read it (xip_verity_sig_parse,
 * xip_verity_sig_read), and the PKCS#7 DER it holds as info describes it
 * (xip_verity_sig_signer).
 *
 * The input is the image's bytes from the end of its tree: its first
 * byte, modulo 16, says how many of them (times 256) are the tree's last
 * bytes, so that the zeros up to the 4096 boundary are fuzzed too.  The
 * signature's digest must match for a block to be accepted, so the DER
 * path is fuzzed on the input itself as well.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static void block_sound(const struct xip_verity_sig *sig, uint64_t size)
{
	if (!sig->present)
		return;
	if (sig->der_len < 1 || sig->der_len > XIP_VERITY_SIG_MAX ||
	    sig->end > size || sig->offset % XIP_VERITY_SIG_ALIGN ||
	    sig->offset + XIP_VERITY_SIG_HDR + sig->der_len > sig->end)
		abort();	/* accepted, but not inside the bytes */
}

FUZZ_TARGET(vsig)
{
	struct xip_verity_info vi = { .present = true };
	struct xip_verity_sig sig;
	char who[512];

	if (!size)
		return 0;
	vi.end = (uint64_t)(data[0] % 16) * 256;
	if (!xip_verity_sig_parse(data, size, &sig))
		block_sound(&sig, size);
	/* a probed tree lies inside the image: vi.end <= size */
	if (vi.end < size && !xip_verity_sig_read(data, size, &vi, &sig)) {
		block_sound(&sig, size);
		if (sig.present && sig.end != size)
			abort();	/* bytes after the block */
		if (sig.present)
			xip_verity_sig_signer(sig.der, sig.der_len, who,
					      sizeof(who));
	}
	if (vi.end <= size) {
		uint64_t end = xip_verity_image_end(data, size, &vi);

		if (end != vi.end && end != size)
			abort();	/* the tree's end, or past a block */
	}
	if (size <= XIP_VERITY_SIG_MAX)
		xip_verity_sig_signer(data, size, who, sizeof(who));
	xip_error_clear();
	return 0;
}
