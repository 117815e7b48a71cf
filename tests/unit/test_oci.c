/* Unit tests of lib/oci: references, WWW-Authenticate, auth files, tokens. */
#include "unit.h"

static void ref_ok(const char *spec, const char *host, const char *repo,
		   const char *tag, const char *digest)
{
	struct xip_oci_ref r;

	assert_int_equal(xip_oci_ref_parse(spec, &r), 0);
	assert_string_equal(r.host, host);
	assert_string_equal(r.repo, repo);
	if (tag)
		assert_string_equal(r.tag, tag);
	else
		assert_null(r.tag);
	if (digest)
		assert_string_equal(r.digest, digest);
	else
		assert_null(r.digest);
	xip_oci_ref_free(&r);
}

static void ref_bad(const char *spec, const char *why)
{
	struct xip_oci_ref r;

	assert_int_equal(xip_oci_ref_parse(spec, &r), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), why));
	assert_null(r.host);
}

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_ref(void **state)
{
	struct xip_oci_ref r;

	(void)state;
	assert_true(xip_oci_is_remote("docker://a/b"));
	assert_false(xip_oci_is_remote("/srv/layout:docker"));
	ref_ok("docker://127.0.0.1:5000/t/img:v1", "127.0.0.1:5000", "t/img",
	       "v1", NULL);
	ref_ok("docker://localhost/img", "localhost", "img", "latest", NULL);
	ref_ok("docker://reg.example.org/a/b/c", "reg.example.org", "a/b/c",
	       "latest", NULL);
	ref_ok("docker://h:1/r@sha256:" D64, "h:1", "r", NULL, "sha256:" D64);
	ref_ok("docker://h:1/r:t@sha256:" D64, "h:1", "r", "t",
	       "sha256:" D64);
	ref_ok("docker://[::1]:5000/r:T_1.x-y", "[::1]:5000", "r", "T_1.x-y",
	       NULL);
	ref_ok("docker://alpine", "docker.io", "library/alpine", "latest", NULL);
	ref_ok("docker://team/app:3", "docker.io", "team/app", "3", NULL);
	ref_ok("docker://my-reg.io/a.b_c__d-e/f", "my-reg.io", "a.b_c__d-e/f",
	       "latest", NULL);
	assert_int_equal(xip_oci_ref_parse("docker://h:1/r:t@sha256:" D64, &r),
			 0);
	assert_string_equal(xip_oci_ref_reference(&r), "sha256:" D64);
	xip_oci_ref_free(&r);
	assert_int_equal(xip_oci_ref_parse("docker://h:1/r:t", &r), 0);
	assert_string_equal(xip_oci_ref_reference(&r), "t");
	xip_oci_ref_free(&r);

	ref_bad("docker://", "no repository");
	ref_bad("docker://h:1/Upper", "not a repository name");
	ref_bad("docker://h:1/a//b", "not a repository name");
	ref_bad("docker://h:1/a/", "not a repository name");
	ref_bad("docker://h:1/-a", "not a repository name");
	ref_bad("docker://h:1/", "not a repository name");
	ref_bad("docker://h:1/r:", "not a tag");
	ref_bad("docker://h:1/r:.t", "not a tag");
	ref_bad("docker://h:1/r:a/b", "not a repository name");
	ref_bad("docker://h:1/r@sha256:abc", "the digest is not sha256");
	ref_bad("docker://h:1/r@md5:" D64, "the digest is not sha256");
	ref_bad("docker://h:x/r", "not a host name");
	ref_bad("docker://h:123456/r", "not a host name");
	ref_bad("docker://h_x.io/r", "not a host name");
	ref_bad("docker://h.io:/r", "not a host name");
	ref_bad("docker://[]/r", "not a host name");
	ref_bad("docker://a/b?x", "not a repository name");
}

static void challenge_ok(const char *h, bool bearer, const char *realm,
			 const char *service, const char *scope)
{
	struct xip_oci_challenge c;

	assert_int_equal(xip_oci_challenge_parse(h, &c), 0);
	assert_int_equal(c.bearer, bearer);
#define EQ(a, b) do { if (b) assert_string_equal(a, b); else assert_null(a); } while (0)
	EQ(c.realm, realm);
	EQ(c.service, service);
	EQ(c.scope, scope);
#undef EQ
	xip_oci_challenge_free(&c);
}

static void challenge_bad(const char *h, const char *why)
{
	struct xip_oci_challenge c;

	assert_int_equal(xip_oci_challenge_parse(h, &c), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), why));
	assert_null(c.realm);
}

static void test_challenge(void **state)
{
	(void)state;
	challenge_ok("Bearer realm=\"https://auth.io/token\",service=\"reg.io\",scope=\"repository:a/b:pull\"",
		     true, "https://auth.io/token", "reg.io",
		     "repository:a/b:pull");
	challenge_ok("bearer  realm = \"https://a/t\" , service=svc", true,
		     "https://a/t", "svc", NULL);
	challenge_ok("Bearer realm=\"https://a/t\",error=\"invalid_token\"",
		     true, "https://a/t", NULL, NULL);
	challenge_ok("Bearer realm=\"https://a/\\\"q\\\"\"", true,
		     "https://a/\"q\"", NULL, NULL);
	challenge_ok("Basic realm=\"Registry Realm\"", false, "Registry Realm",
		     NULL, NULL);
	challenge_ok("Basic", false, NULL, NULL, NULL);
	challenge_ok("Basic realm=x, charset=\"UTF-8\"", false, "x", NULL, NULL);

	challenge_bad("Negotiate abc", "not Basic or Bearer");
	challenge_bad("Bearerrealm=x", "not Basic or Bearer");
	challenge_bad("Bearer service=x", "Bearer without a realm");
	challenge_bad("Bearer realm=\"\"", "Bearer without a realm");
	challenge_bad("Bearer realm=\"https://a", "malformed");
	challenge_bad("Bearer realm=", "malformed");
	challenge_bad("Bearer =x", "malformed");
	challenge_bad("Bearer realm=a b=c", "malformed");
	challenge_bad("Bearer realm=a,realm=b", "realm twice");
	challenge_bad("Bearer realm=\"https://a/\\", "malformed");
}

static void auth_file(const char *name, const char *text)
{
	FILE *f = fopen(unit_path(name), "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_authfile(void **state)
{
	char *u = NULL, *p = NULL;

	(void)state;
	/* dXNlcjpwOmFzcw== is user:p:ass (a colon in the password) */
	auth_file("auth.json",
		  "{\"auths\": {\"reg.io:5000\": {\"auth\": \"dXNlcjpwOmFzcw==\"},"
		  " \"https://index.docker.io/v1/\": {\"auth\": \"ZDpo\"},"
		  " \"bad.io\": {\"auth\": \"!!!\"},"
		  " \"nocolon.io\": {\"auth\": \"dXNlcg==\"},"
		  " \"nul.io\": {\"auth\": \"YQBiOmM=\"},"
		  " \"noauth.io\": {\"identitytoken\": \"x\"}}}");
	assert_int_equal(xip_oci_authfile_lookup(unit_path("auth.json"),
						 "reg.io:5000", &u, &p), 0);
	assert_string_equal(u, "user");
	assert_string_equal(p, "p:ass");
	free(u);
	free(p);
	assert_int_equal(xip_oci_authfile_lookup(unit_path("auth.json"),
						 "docker.io", &u, &p), 0);
	assert_string_equal(u, "d");
	assert_string_equal(p, "h");
	free(u);
	free(p);
	assert_int_equal(xip_oci_authfile_lookup(unit_path("auth.json"),
						 "reg.io", &u, &p), -ENOENT);
	assert_int_equal(xip_oci_authfile_lookup(unit_path("auth.json"),
						 "noauth.io", &u, &p), -ENOENT);
	assert_int_equal(xip_oci_authfile_lookup(unit_path("auth.json"),
						 "bad.io", &u, &p), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "bad.io: \"auth\" is not base64"));
	assert_int_equal(xip_oci_authfile_lookup(unit_path("auth.json"),
						 "nocolon.io", &u, &p), -EINVAL);
	assert_int_equal(xip_oci_authfile_lookup(unit_path("auth.json"),
						 "nul.io", &u, &p), -EINVAL);
	assert_int_equal(xip_oci_authfile_lookup(unit_path("none.json"),
						 "reg.io", &u, &p), -ENOENT);
	auth_file("notjson", "{\"auths\": ");
	assert_int_equal(xip_oci_authfile_lookup(unit_path("notjson"),
						 "reg.io", &u, &p), -EINVAL);
	auth_file("noauths", "{\"credHelpers\": {}}");
	assert_int_equal(xip_oci_authfile_lookup(unit_path("noauths"),
						 "reg.io", &u, &p), -ENOENT);
	assert_int_equal(xip_oci_authfile_lookup(unit_tmpdir(), "reg.io", &u,
						 &p), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "not a regular file"));
}

static void test_token(void **state)
{
	static const char *const bad[] = {
		"{}", "{\"token\": 1}", "{\"token\": \"\"}", "[\"token\"]",
		"{\"token\": \"a\\nb\"}", "not json",
	};
	char *t = NULL;

	(void)state;
	assert_int_equal(xip_oci_token_parse("{\"token\": \"abc\", \"expires_in\": 300}",
					     34 + 17, &t), 0);
	assert_string_equal(t, "abc");
	free(t);
	assert_int_equal(xip_oci_token_parse("{\"access_token\": \"xyz\"}", 23,
					     &t), 0);
	assert_string_equal(t, "xyz");
	free(t);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(xip_oci_token_parse(bad[i], strlen(bad[i]), &t),
				 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ref),
		cmocka_unit_test(test_challenge),
		cmocka_unit_test(test_authfile),
		cmocka_unit_test(test_token),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
