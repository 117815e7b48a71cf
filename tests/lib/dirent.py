#!/usr/bin/env python3
"""dirent.py IMAGE BLOCK NAME FIELD VALUE [FIELD VALUE...]

Change fields of the entry called NAME in the directory block BLOCK (of
4096 bytes) of an ext2 IMAGE, in place: inode, rec_len, name_len,
file_type (numbers; a leading + or - adds to the value found), name
(bytes of the same length) or pad (the byte just after the name).  Fails when no entry has that name.
"""
import struct
import sys

img, blk, name = sys.argv[1:4]
changes = sys.argv[4:]
if not changes or len(changes) % 2:
	sys.exit("usage: dirent.py IMAGE BLOCK NAME FIELD VALUE...")
bs = 4096
base = int(blk) * bs
with open(img, "r+b") as f:
	f.seek(base)
	b = bytearray(f.read(bs))
	off = 0
	while off + 8 <= bs:
		ino, rec, nlen, ftype = struct.unpack_from("<IHBB", b, off)
		if bytes(b[off + 8:off + 8 + nlen]) == name.encode():
			break
		if rec < 8:
			sys.exit("dirent.py: %s: no entry '%s'" % (img, name))
		off += rec
	else:
		sys.exit("dirent.py: %s: no entry '%s'" % (img, name))
	fields = {"inode": ("<I", 0), "rec_len": ("<H", 4),
		  "name_len": ("<B", 6), "file_type": ("<B", 7)}
	for field, value in zip(changes[::2], changes[1::2]):
		if field == "name":
			new = value.encode()
			if len(new) != nlen:
				sys.exit("dirent.py: the new name needs %d bytes"
					 % nlen)
			b[off + 8:off + 8 + nlen] = new
			continue
		if field == "pad":
			b[off + 8 + nlen] = int(value, 0)
			continue
		fmt, at = fields[field]
		old = struct.unpack_from(fmt, b, off + at)[0]
		v = old + int(value) if value[0] in "+-" else int(value, 0)
		struct.pack_into(fmt, b, off + at, v)
	f.seek(base)
	f.write(b)
