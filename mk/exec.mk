# exec: ELF parsing and validation, the user-space loader, `xiptool exec`.
libxip_a_SOURCES += lib/elf.c

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_elf
tests_unit_test_elf_SOURCES = tests/unit/test_elf.c tests/unit/unit.h
tests_unit_test_elf_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_elf_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_elf
endif
