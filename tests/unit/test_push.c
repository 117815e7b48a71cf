/*
 * Unit tests of the OCI artifact of an image (lib/attach/ocipush.c,
 * ocipull.c): the manifest and config builders, read back by the
 * manifest check attach docker:// makes; what that check refuses.
 */
#include "unit.h"
#include "attach/attach_int.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void meta(struct xip_push_meta *m, bool verity)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->title, sizeof(m->title), "root.img");
	snprintf(m->label, sizeof(m->label), "rootfs");
	snprintf(m->uuid, sizeof(m->uuid),
		 "32a271be-878f-556b-96d4-beba0bbdfc02");
	m->size = 241664;
	snprintf(m->layer_digest, sizeof(m->layer_digest), "sha256:" D64);
	if (verity) {
		snprintf(m->root_hash, sizeof(m->root_hash), "%s", D64);
		m->is_signed = true;
	}
}

static void test_manifest_round_trip(void **state)
{
	struct xip_push_meta m;
	char out[4096], digest[80];
	uint64_t size = 0;

	(void)state;
	meta(&m, false);
	assert_int_equal(xip_push_manifest(&m, "sha256:" D64, 99, out,
					   sizeof(out)), 0);
	assert_non_null(strstr(out, "\"artifactType\":\"application/vnd.xiptool.image.v1\""));
	assert_non_null(strstr(out, "\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\""));
	assert_non_null(strstr(out, "{\"mediaType\":\"application/vnd.xiptool.image.config.v1+json\",\"digest\":\"sha256:" D64 "\",\"size\":99}"));
	assert_non_null(strstr(out, "\"layers\":[{\"mediaType\":\"application/vnd.xiptool.image.layer.v1.ext2\",\"digest\":\"sha256:" D64 "\",\"size\":241664}]"));
	assert_non_null(strstr(out, "\"org.opencontainers.image.title\":\"root.img\""));
	assert_non_null(strstr(out, "\"org.xiptool.image.label\":\"rootfs\""));
	assert_non_null(strstr(out, "\"org.xiptool.image.size\":\"241664\""));
	assert_null(strstr(out, "root-hash"));
	assert_int_equal(xip_ocipull_manifest(out, strlen(out), "m", digest,
					      sizeof(digest), &size), 0);
	assert_string_equal(digest, "sha256:" D64);
	assert_int_equal(size, 241664);
}

static void test_config(void **state)
{
	struct xip_push_meta m;
	char out[1024];

	(void)state;
	meta(&m, false);
	assert_int_equal(xip_push_config(&m, out, sizeof(out)), 0);
	assert_string_equal(out, "{\"label\":\"rootfs\",\"uuid\":\"32a271be-878f-556b-96d4-beba0bbdfc02\",\"size\":241664,\"signed\":false}");
	meta(&m, true);
	assert_int_equal(xip_push_config(&m, out, sizeof(out)), 0);
	assert_string_equal(out, "{\"label\":\"rootfs\",\"uuid\":\"32a271be-878f-556b-96d4-beba0bbdfc02\",\"size\":241664,\"rootHash\":\"" D64 "\",\"signed\":true}");
}

static void test_escaping_and_room(void **state)
{
	struct xip_push_meta m;
	char out[4096], digest[80];
	uint64_t size;

	(void)state;
	meta(&m, true);
	snprintf(m.label, sizeof(m.label), "a\"b\\c\nd");
	snprintf(m.title, sizeof(m.title), "x\"}],\"layers\":[");
	assert_int_equal(xip_push_manifest(&m, "sha256:" D64, 1, out,
					   sizeof(out)), 0);
	assert_non_null(strstr(out, "\"org.xiptool.image.label\":\"a\\\"b\\\\c\\u000ad\""));
	assert_non_null(strstr(out, "\"org.xiptool.image.root-hash\":\"" D64 "\""));
	/* still one layer: the title cannot add JSON of its own */
	assert_int_equal(xip_ocipull_manifest(out, strlen(out), "m", digest,
					      sizeof(digest), &size), 0);
	/* too small a buffer is an error, never a cut manifest */
	for (size_t cap = 1; cap < strlen(out) + 1; cap += 37)
		assert_int_equal(xip_push_manifest(&m, "sha256:" D64, 1, out,
						   cap), -ENAMETOOLONG);
	assert_int_equal(xip_push_config(&m, out, 20), -ENAMETOOLONG);
}

static int pull_check(const char *json, const char *why)
{
	char digest[80];
	uint64_t size;
	int ret = xip_ocipull_manifest(json, strlen(json), "m", digest,
				       sizeof(digest), &size);

	if (why)
		assert_non_null(strstr(xip_errmsg(), why));
	return ret;
}

#define LAYER(t, d, s) "{\"mediaType\":\"" t "\",\"digest\":\"" d "\",\"size\":" s "}"
#define EXT2 "application/vnd.xiptool.image.layer.v1.ext2"
#define ART "\"artifactType\":\"application/vnd.xiptool.image.v1\","

static void test_pull_refuses(void **state)
{
	(void)state;
	assert_int_equal(pull_check("{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
				    "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\"},"
				    "\"layers\":[" LAYER("application/vnd.oci.image.layer.v1.tar+gzip", "sha256:" D64, "1") "]}",
				    "m: a container image: use mkfs --oci for container images"),
			 -EMEDIUMTYPE);
	assert_int_equal(pull_check("{\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[]}",
				    "an image index"),
			 -EMEDIUMTYPE);
	assert_int_equal(pull_check("{" ART "\"layers\":[" LAYER(EXT2, "sha256:" D64, "1") "," LAYER(EXT2, "sha256:" D64, "1") "]}",
				    "one layer"),
			 -EINVAL);
	assert_int_equal(pull_check("{" ART "\"layers\":[" LAYER("application/x-tar", "sha256:" D64, "1") "]}",
				    "a layer of type application/x-tar"),
			 -EMEDIUMTYPE);
	assert_int_equal(pull_check("{" ART "\"layers\":[" LAYER(EXT2, "sha256:../../x", "1") "]}",
				    "no sha256 digest"),
			 -EINVAL);
	assert_int_equal(pull_check("{" ART "\"layers\":[" LAYER(EXT2, "sha256:" D64, "0") "]}",
				    "no sha256 digest or size"),
			 -EINVAL);
	assert_int_equal(pull_check("{" ART "\"layers\":[" LAYER(EXT2, "sha256:" D64, "1") "]", "not JSON"),
			 -EINVAL);
	assert_int_equal(pull_check("{" ART "\"layers\":[" LAYER(EXT2, "sha256:" D64, "1") "]}", NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manifest_round_trip),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_escaping_and_room),
		cmocka_unit_test(test_pull_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
