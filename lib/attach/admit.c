// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The policy file's attach rule (xiptool.conf(5)) applied to an attach:
 * what it asks of the segment, before anything is made and once it is
 * made, before it is recorded.  xip_registry_admits() judges the same
 * again at exec.
 */
#include <errno.h>

#include "attach/xip_attach.h"
#include "attach/attach_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "registry/xip_registry.h"

/* What the policy file's attach rule asks of @o (XIP_POLICY_ANY: nothing) */
static enum xip_policy_level admit_level(const struct xip_attach_opts *o)
{
	return o->policy ? o->policy->attach.level : XIP_POLICY_ANY;
}

/* -EPERM: @o's attach refused by the policy file's rule, for @why. */
static int admit_refuse(const struct xip_attach_opts *o, const char *why)
{
	return xip_error(-EPERM, "%s: refused by %s line %u (attach = %s): %s",
			 o->image ? o->image : o->name, o->policy->path,
			 o->policy->attach.line,
			 xip_policy_level_name(o->policy->attach.level), why);
}

/*
 * Before anything is made: an attach that checks nothing (no root hash,
 * no trust store) cannot give what the policy asks.  Every way an attach verifies the
 * image's bytes belongs in this test.
 */
int xip_attach_admit_early(const struct xip_attach_opts *o)
{
	if (admit_level(o) >= XIP_POLICY_VERIFIED && !o->root_hash &&
	    !o->trust)
		return admit_refuse(o, "the image would not be verified (attach it with --root-hash or --trust)");
	return 0;
}

/*
 * What was made, before it is recorded: verified and sealed, and signed
 * when the policy asks (xip_registry_admits() judges it again at exec).
 */
int xip_attach_admit_made(const struct xip_attach_opts *o,
			  const struct xip_seg_entry *e)
{
	if (admit_level(o) >= XIP_POLICY_VERIFIED && !e->verified)
		return admit_refuse(o, "the segment is not verified");
	if (admit_level(o) >= XIP_POLICY_SIGNED && !e->signer[0])
		return admit_refuse(o, "the segment is not signed (no signature of its root hash checked against a trust store)");
	return 0;
}
