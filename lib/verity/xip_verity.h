/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Verified images: a dm-verity hash tree (format 1, the layout
 * veritysetup writes and the kernel's dm-verity reads) appended after the
 * file system, in the same image.  The 512-byte verity superblock sits at
 * the hash offset, the file system's size (s_blocks_count * block size),
 * padded to one hash block; the tree follows, its top level first.
 *
 * Part of the public API (included by xip.h).
 */
#ifndef XIP_VERITY_PUB_H
#define XIP_VERITY_PUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XIP_VERITY_SB_SIZE	512
#define XIP_VERITY_SALT_MAX	256
#define XIP_VERITY_DIGEST_MAX	64	/* SHA-512 */
#define XIP_VERITY_SALT_DEFAULT	32	/* veritysetup's default */

/* What an image's verity superblock says, with the tree's layout. */
struct xip_verity_info {
	bool present;			/* a verity superblock at hash_offset */
	uint64_t hash_offset;		/* bytes: the verity superblock */
	uint64_t tree_offset;		/* bytes: the first hash block */
	uint64_t tree_blocks;		/* hash blocks of the tree */
	uint64_t end;			/* bytes: the end of the tree */
	char algorithm[32];		/* "sha256" */
	unsigned int digest_size;
	unsigned int data_block_size, hash_block_size;
	uint64_t data_blocks;
	unsigned int levels;
	uint8_t salt[XIP_VERITY_SALT_MAX];
	unsigned int salt_size;
	uint8_t uuid[16];
};

/* Where a check found the first bad bytes. */
enum xip_verity_where {
	XIP_VERITY_OK = 0,
	XIP_VERITY_DATA,		/* data block @block */
	XIP_VERITY_HASH,		/* hash block @block (of the image) */
	XIP_VERITY_ROOT,		/* the root hash: wrong, or the top
					 * hash block (@block) is bad */
	XIP_VERITY_SUPER,		/* the verity superblock */
	XIP_VERITY_MISSING,		/* no tree, or a truncated one */
};

struct xip_verity_bad {
	enum xip_verity_where where;
	uint64_t block;			/* in the image, in its block size */
	uint64_t offset;		/* its first byte in the image */
};

/*
 * The verity superblock and layout of the image of @size bytes at @base
 * (a mapped segment or image): its ext2 superblock gives the hash offset.
 * 0 with vi->present false when there is no verity superblock there;
 * -EUCLEAN with the reason in the error record when one is there but
 * malformed or its tree runs past @size; -EOPNOTSUPP for parameters this
 * library does not check (hash types, algorithms other than sha1,
 * sha256, sha512, block sizes that differ from each other).
 */
int xip_verity_probe(const uint8_t *base, uint64_t size,
		     struct xip_verity_info *vi);

/*
 * Check every data and hash block of the image at @base (@size bytes)
 * against @root (@root_len bytes).  0 when all match; -EBADMSG with the
 * first bad block in @bad (may be NULL) and a message naming it;
 * -EUCLEAN/-EOPNOTSUPP as xip_verity_probe().  Hashing runs on up to
 * @threads threads (0: the online CPUs, at most 8).
 */
int xip_verity_check(const uint8_t *base, uint64_t size,
		     const uint8_t *root, size_t root_len, unsigned int threads,
		     struct xip_verity_info *vi, struct xip_verity_bad *bad);

/* Bytes of the verity superblock block and the tree for @data_blocks. */
uint64_t xip_verity_area_size(uint64_t data_blocks, unsigned int block_size);

/*
 * Checking an image as its bytes arrive (attach --root-hash): each block
 * is hashed once, while it is in the cache, by whichever thread moved it;
 * the tree's levels are compared at the end (they are small).
 */

/*
 * Read @len bytes at @off of the image into @buf, which is valid only
 * until the reader returns: 0, or a negative errno with its message.
 */
typedef int xip_verity_read_fn(void *ctx, void *buf, size_t len,
			       uint64_t off);

struct xip_verity_stream;
/*
 * A check of an image of @size bytes, its ext2 and verity superblocks
 * read ahead of the rest through @rd: 0, or the errors of
 * xip_verity_check() with @bad->where saying what is wrong (the tree
 * missing or truncated, or its superblock), or @rd's own error with
 * @bad->where XIP_VERITY_OK.
 */
int xip_verity_stream_open(uint64_t size, xip_verity_read_fn *rd, void *ctx,
			   struct xip_verity_stream **sp,
			   struct xip_verity_bad *bad);
void xip_verity_stream_free(struct xip_verity_stream *s);
const struct xip_verity_info *
xip_verity_stream_info(const struct xip_verity_stream *s);
/*
 * The bytes @p of the image at @off (@len bytes) have arrived: hash the
 * whole blocks among them.  Threads may call it at once for ranges that
 * share no block.  0, or -ENOMEM/-EIO.
 */
int xip_verity_stream_hash(struct xip_verity_stream *s, uint64_t off,
			   const uint8_t *p, uint64_t len);
/* The whole blocks of @len bytes at @off are zeros (a hole, a range the
 * server reported as zeros): their digest is known. */
void xip_verity_stream_zero(struct xip_verity_stream *s, uint64_t off,
			    uint64_t len);
/*
 * Every block has arrived in @fd (named @name): compare the digests with
 * the tree read from @fd, level by level from the root down, as
 * xip_verity_check() does; the superblocks read ahead must be those in
 * @fd.  0, or -EBADMSG with the lowest bad block of the highest bad
 * level in @bad; -EIO when a block was not hashed or the superblocks
 * changed.  @vi gets the tree's description.
 */
int xip_verity_stream_finish(struct xip_verity_stream *s, int fd,
			     const char *name, const uint8_t *root,
			     size_t root_len, struct xip_verity_info *vi,
			     struct xip_verity_bad *bad);
/*
 * Block by block (attach --lazy): the verity superblock's block and the
 * whole tree, @area (from the hash offset to the tree's end), checked
 * from the root down against @root; then each data block as it lands
 * (xip_verity_stream_check: @blk of the data, hash_block_size bytes at
 * @p) against its digest in the tree's lowest level.  0, or -EBADMSG
 * with where in @bad and the message; -EINVAL for a root hash of the
 * wrong length.
 */
int xip_verity_stream_tree(struct xip_verity_stream *s, const uint8_t *area,
			   const uint8_t *root, size_t root_len,
			   struct xip_verity_bad *bad);
int xip_verity_stream_check(struct xip_verity_stream *s, uint64_t blk,
			    const uint8_t *p, struct xip_verity_bad *bad);
/* Does the tree say data block @blk is zeros? */
bool xip_verity_stream_is_zero(const struct xip_verity_stream *s,
			       uint64_t blk);
/* The ext2 superblock's bytes read ahead (the first of the image). */
const uint8_t *xip_verity_stream_head(const struct xip_verity_stream *s,
				      size_t *len);


/*
 * Write the verity superblock and tree (sha256, format 1) for the first
 * @data_blocks blocks of @block_size bytes at @base into @fd at
 * @data_blocks * @block_size: that area (xip_verity_area_size()) must
 * exist in the file.  @salt of @salt_len bytes (at most
 * XIP_VERITY_SALT_MAX); @uuid the superblock's.  The root hash goes to
 * @root (XIP_VERITY_DIGEST_MAX bytes), its length to *@root_len.
 */
int xip_verity_write(const uint8_t *base, uint64_t data_blocks,
		     unsigned int block_size, const uint8_t *salt,
		     size_t salt_len, const uint8_t uuid[16], int fd,
		     uint8_t *root, size_t *root_len);

/*
 * A salt of XIP_VERITY_SALT_DEFAULT bytes into @salt: derived from @seed
 * (SHA-256 of a fixed prefix and @seed: the same image, the same salt)
 * or, when @seed is NULL, random (getrandom(2)).
 */
int xip_verity_salt(const void *seed, size_t seed_len, uint8_t *salt);


/* Human words for @where ("data block", "hash block", ...). */
const char *xip_verity_where_name(enum xip_verity_where where);

/*
 * Root hash signatures: a PKCS#7 (CMS) detached signature, DER, of the
 * root hash as lower-case hex digits without a newline, with no signed
 * attributes and no certificates (openssl smime -sign -nocerts -noattr
 * -binary -outform der): the format of veritysetup's
 * --root-hash-signature and the kernel's dm-verity-verify-sig.c.
 *
 * It travels in the image, after the hash tree, in a signature block at
 * the first multiple of 4096 bytes at or past the tree's end:
 *
 *   offset 0     8 bytes   magic "xipsig1\0"
 *          8     le32      version: 1
 *         12     le32      header size: 4096
 *         16     le32      DER length: 1 to XIP_VERITY_SIG_MAX
 *         20     le32      flags: 0
 *         24     32 bytes  SHA-256 of the DER bytes
 *         56     zeros up to 4096
 *   4096         the DER bytes, then zeros up to a multiple of 4096
 *
 * The image ends there.  Every field is checked: another magic, version
 * or flags, a length past the cap or past the image, a digest that does
 * not match, bytes where zeros belong are all errors.
 */
#define XIP_VERITY_SIG_MAX	65536	/* DER bytes at most */
#define XIP_VERITY_SIG_HDR	4096
#define XIP_VERITY_SIG_ALIGN	4096

struct xip_verity_sig {
	bool present;
	uint64_t offset;		/* bytes: the block's header */
	uint64_t end;			/* bytes: the end of the block */
	const uint8_t *der;		/* into the bytes parsed */
	size_t der_len;
};

/*
 * The signature block of the @len bytes at @p (the block's first byte):
 * 0 with sig->present false when they do not start with its magic (or
 * are fewer than the magic); 0 with the block in @sig (offset 0); or
 * -EUCLEAN with the reason in the error record.  Nothing is allocated.
 */
int xip_verity_sig_parse(const uint8_t *p, uint64_t len,
			 struct xip_verity_sig *sig);

/*
 * The signature block after the tree described by @vi in the image of
 * @size bytes at @base: as xip_verity_sig_parse(), offsets in the image;
 * bytes between the tree and the block must be zeros.  0 with
 * sig->present false when the image ends with the tree.
 */
int xip_verity_sig_read(const uint8_t *base, uint64_t size,
			const struct xip_verity_info *vi,
			struct xip_verity_sig *sig);

/*
 * Where the image described by @vi ends: past its signature block when a
 * valid one follows the tree, else at the tree's end.
 */
uint64_t xip_verity_image_end(const uint8_t *base, uint64_t size,
			      const struct xip_verity_info *vi);

/*
 * The signature block for @der (@der_len bytes) in a new buffer *@blk of
 * *@blk_len bytes (a multiple of 4096), for free().
 */
int xip_verity_sig_block(const uint8_t *der, size_t der_len, uint8_t **blk,
			 size_t *blk_len);

/* A private key and its certificate, loaded from PEM files. */
struct xip_verity_signer;

/*
 * Load the PEM private key @key and certificate @cert: 0, or -errno with
 * a message (unreadable, not PEM, an encrypted key, a key that does not
 * match the certificate).
 */
int xip_verity_signer_load(const char *key, const char *cert,
			   struct xip_verity_signer **sp);
void xip_verity_signer_free(struct xip_verity_signer *s);

/*
 * Sign the root hash @root (@root_len bytes) as its hex text: the DER in
 * a new buffer *@der (free()) of *@der_len bytes.
 */
int xip_verity_sign(const struct xip_verity_signer *s, const uint8_t *root,
		    size_t root_len, uint8_t **der, size_t *der_len);

/*
 * The root hash of the tree of the image at @base (@size bytes, probed
 * into @vi): the digest of its top hash block, into @root
 * (XIP_VERITY_DIGEST_MAX bytes), its length in *@root_len.
 */
int xip_verity_root(const uint8_t *base, uint64_t size,
		    const struct xip_verity_info *vi, uint8_t *root,
		    size_t *root_len);

/*
 * Check the detached signature @der (@der_len bytes) over @root_hex
 * against the certificates of @trust (a PEM file of one or more, or a
 * directory of PEM files, whose entries are opened without following
 * symbolic links): the signer must be one of them, or chain to one (each
 * trusted certificate is an anchor), valid now.  0 with the signer's
 * subject in @signer (@signer_len bytes); -EKEYREJECTED when the
 * signature does not verify; -errno for unreadable or malformed input.
 */
int xip_verity_sig_check(const uint8_t *der, size_t der_len,
			 const char *root_hex, const char *trust,
			 char *signer, size_t signer_len);

/*
 * The signature that the image at @base (@size bytes) carries after its
 * tree, checked against @trust as xip_verity_sig_check() does, over the
 * root hash of the tree's top block, which goes to @root
 * (XIP_VERITY_DIGEST_MAX bytes, *@root_len): the data and the rest of
 * the tree are still to be checked against it (xip_verity_check()).
 * 0 with the signer's subject in @signer; -ENOKEY when the image has no
 * tree or no signature; -EKEYREJECTED when the signature does not verify;
 * -EUCLEAN for a malformed tree or block; each with a message.
 */
int xip_verity_sig_verify_image(const uint8_t *base, uint64_t size,
				const char *trust, uint8_t *root,
				size_t *root_len, char *signer,
				size_t signer_len);

/*
 * As xip_verity_sig_verify_image(), with the detached signature @der
 * (@der_len bytes) in place of the image's own (NULL: the image's).
 */
int xip_verity_sig_verify_detached(const uint8_t *base, uint64_t size,
				   const uint8_t *der, size_t der_len,
				   const char *trust, uint8_t *root,
				   size_t *root_len, char *signer,
				   size_t signer_len);

/*
 * A detached signature from the file @path: DER (openssl smime -sign
 * -outform der) or PEM ("-----BEGIN PKCS7-----"); the DER in a new
 * buffer *@der (free()) of *@der_len bytes.
 */
int xip_verity_sig_load(const char *path, uint8_t **der, size_t *der_len);

/*
 * Trust stores: a PEM file of certificates or a directory of them (its
 * *.pem and *.crt files).  A store is used only when it, and every entry
 * of a directory, is owned by root (or by the caller, for a caller who
 * is not root) and writable by no one else; symbolic links, the store's
 * own or in a directory, are refused.  Each trusted certificate is an
 * anchor: a signer must be one of them or chain to one, valid now.
 */
#define XIP_VERITY_TRUST_DIR	"/etc/xiptool/trust.d"

/*
 * The default trust store: $XIPTOOL_TRUST_DIR when set, else
 * XIP_VERITY_TRUST_DIR; NULL when that does not exist.
 */
const char *xip_verity_trust_default(void);

/* Load the store @trust to check it: 0, or -errno with the reason. */
int xip_verity_trust_check(const char *trust);

/*
 * Who signed @der, without checking it: the signer certificate's subject
 * when the signature carries it, else "issuer ISSUER serial HEX" from
 * its SignerInfo.  0, or -EUCLEAN for DER that is not a signed PKCS#7.
 */
int xip_verity_sig_signer(const uint8_t *der, size_t der_len, char *buf,
			  size_t len);

/*
 * Sign the verity image file @image (or sign it again): its root hash,
 * read from its tree after every block is checked against it, is signed
 * with @s and the image is rewritten with a new signature block in place
 * of any old one; the file system and the tree are copied unchanged.
 * The new image is a private file renamed over the old one: a kill
 * leaves one or the other.  The DER in *@der (free()), *@der_len bytes.
 */
int xip_verity_sign_image(const char *image,
			  const struct xip_verity_signer *s, uint8_t **der,
			  size_t *der_len);

#endif
