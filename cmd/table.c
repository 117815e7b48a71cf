// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Key/value output (a two-column table or one JSON object) through
 * libsmartcols, for the commands that report fields.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libsmartcols.h>

#include "cmd.h"
#include "util/xip_util.h"

enum kv_type { KV_STR, KV_NUM, KV_BOOL };

struct kv_item {
	char *label, *key, *val;
	enum kv_type type;
};

struct kv {
	char *json_name;
	struct kv_item *items;
	size_t n, cap;
};

struct libscols_table *cmd_json_table(const char *name,
				      const struct cmd_json_col *cols,
				      size_t n)
{
	struct libscols_table *tb = scols_new_table();

	if (!tb)
		return NULL;
	scols_table_enable_json(tb, 1);
	scols_table_set_name(tb, name);
	for (size_t i = 0; i < n; i++) {
		struct libscols_column *cl =
			scols_table_new_column(tb, cols[i].name, 0, 0);

		if (!cl) {
			scols_unref_table(tb);
			return NULL;
		}
		scols_column_set_json_type(cl, cols[i].type);
	}
	return tb;
}

struct kv *kv_new(const char *json_name)
{
	struct kv *kv = calloc(1, sizeof(*kv));

	if (kv)
		kv->json_name = strdup(json_name);
	return kv;
}

static void kv_add(struct kv *kv, const char *label, const char *key,
		   const char *val, enum kv_type type)
{
	struct kv_item *it;

	if (!kv)
		return;
	if (xip_grow((void **)&kv->items, &kv->cap, kv->n + 1,
		     sizeof(*kv->items)))
		return;
	it = &kv->items[kv->n++];
	it->label = strdup(label);
	it->key = strdup(key);
	it->val = strdup(val ? val : "");
	it->type = type;
}

void kv_str(struct kv *kv, const char *label, const char *key, const char *val)
{
	kv_add(kv, label, key, val, KV_STR);
}

void kv_u64(struct kv *kv, const char *label, const char *key, uint64_t val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, val);
	kv_add(kv, label, key, buf, KV_NUM);
}

void kv_bool(struct kv *kv, const char *label, const char *key, bool val)
{
	kv_add(kv, label, key, val ? "yes" : "no", KV_BOOL);
}

static int kv_print_json(struct kv *kv)
{
	struct libscols_table *tb = scols_new_table();
	struct libscols_line *ln;
	int ret = -ENOMEM;

	if (!tb)
		return ret;
	scols_table_enable_json(tb, 1);
	scols_table_set_name(tb, kv->json_name);
	ln = scols_table_new_line(tb, NULL);
	for (size_t i = 0; ln && i < kv->n; i++) {
		struct libscols_column *cl =
			scols_table_new_column(tb, kv->items[i].key, 0, 0);
		const char *v = kv->items[i].val;

		if (!cl)
			goto out;
		switch (kv->items[i].type) {
		case KV_NUM:
			scols_column_set_json_type(cl, SCOLS_JSON_NUMBER);
			break;
		case KV_BOOL:
			scols_column_set_json_type(cl, SCOLS_JSON_BOOLEAN);
			v = strcmp(v, "yes") ? "0" : "1";
			break;
		default:
			scols_column_set_json_type(cl, SCOLS_JSON_STRING);
			v = cmd_json_safe(v);
		}
		scols_line_set_data(ln, i, v);
	}
	ret = scols_print_table(tb);
out:
	scols_unref_table(tb);
	return ret;
}

static int kv_print_text(struct kv *kv)
{
	struct libscols_table *tb = scols_new_table();
	int ret = -ENOMEM;

	if (!tb)
		return ret;
	scols_table_enable_noheadings(tb, 1);
	if (!scols_table_new_column(tb, "FIELD", 0, 0) ||
	    !scols_table_new_column(tb, "VALUE", 0, SCOLS_FL_NOEXTREMES))
		goto out;
	for (size_t i = 0; i < kv->n; i++) {
		struct libscols_line *ln = scols_table_new_line(tb, NULL);
		char label[128];

		if (!ln)
			goto out;
		snprintf(label, sizeof(label), "%s:", kv->items[i].label);
		scols_line_set_data(ln, 0, label);
		scols_line_set_data(ln, 1, kv->items[i].val);
	}
	ret = scols_print_table(tb);
out:
	scols_unref_table(tb);
	return ret;
}

int kv_print(struct kv *kv, bool json)
{
	if (!kv)
		return -ENOMEM;
	return json ? kv_print_json(kv) : kv_print_text(kv);
}

void kv_free(struct kv *kv)
{
	if (!kv)
		return;
	for (size_t i = 0; i < kv->n; i++) {
		free(kv->items[i].label);
		free(kv->items[i].key);
		free(kv->items[i].val);
	}
	free(kv->items);
	free(kv->json_name);
	free(kv);
}
