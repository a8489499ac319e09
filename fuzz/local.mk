# fuzz: libFuzzer targets for the readers of untrusted input (the decoder,
# the stack table and mappings parsers, the JSON lines reader, the report
# over a decoded recording). Built only by 'make fuzz', with clang, outside
# automake's programs: the normal (gcc) build and distcheck never touch
# them. 'make fuzz FUZZ_SECONDS=N' runs each for N seconds from the seed
# corpora in fuzz/corpus/ and fails on any crash, leak, timeout or UB.
# fuzz/KNOWN lists the defects the harnesses keep out until they are fixed.
FUZZ_CC = clang
FUZZ_SECONDS = 60
FUZZ_RSS_MB = 2048
FUZZ_SAN = -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN) -Wall \
	-Wno-unused-parameter -Wno-bitwise-instead-of-logical -pthread
FUZZ_CPPFLAGS = -I$(top_builddir) -I$(top_builddir)/report \
	-I$(top_srcdir)/include \
	-I$(top_srcdir)/common -I$(top_srcdir)/host -I$(top_srcdir)/report \
	-I$(top_srcdir)/fuzz
# fuzz/KNOWN: qsort(NULL, 0) in symbolize.c (a module without function
# symbols) is being fixed elsewhere; until then the targets that name
# frames do not check nonnull arguments.
FUZZ_SYM_SAN = -fno-sanitize=nonnull-attribute

FUZZ_TARGETS = fuzz-decoder fuzz-stack-table fuzz-mappings fuzz-jsonl \
	fuzz-report

FUZZ_DECODER_SRC = $(srcdir)/plugins/msgpack-zstd/decoder.c \
	$(srcdir)/plugins/msgpack-zstd/msgpack-read.c \
	$(srcdir)/plugins/msgpack-zstd/msgpack-read-fast.c
# Whole directories, so that a file split off later is linked too; only
# bpf-check.c (libbpf) is left out.
FUZZ_SYM_SRC = $(srcdir)/report/symbolize.c \
	$(wildcard $(srcdir)/report/sym-*.c) \
	$(filter-out %/bpf-check.c,$(wildcard $(srcdir)/common/*.c))
FUZZ_REPORT_SRC = $(filter-out %/symbolize.c $(srcdir)/report/sym-%.c, \
	$(wildcard $(srcdir)/report/*.c))
# generated in the build tree: pprof's protobuf code, the html script
FUZZ_REPORT_GEN = report/profile.pb-c.c
FUZZ_REPORT_GEN_H = report/profile.pb-c.h report/report-html.js.h
# libdw names frames (report/sym-dwarf.c); protobuf-c and zlib: pprof
FUZZ_SYM_LIBS = $(LIBDW_CFLAGS) $(LIBELF_CFLAGS) $(LIBDW_LIBS) \
	$(LIBELF_LIBS) -ldl

FUZZ_H = $(srcdir)/fuzz/fuzz-common.h $(srcdir)/fuzz/fuzz-sym.h \
	$(srcdir)/fuzz/fuzz-zstd.h config.h
FUZZ_BUILD = $(AM_V_CCLD)$(MKDIR_P) fuzz && \
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) -o $@

fuzz/fuzz-decoder: $(srcdir)/fuzz/fuzz-decoder.c $(FUZZ_DECODER_SRC) $(FUZZ_H)
	$(FUZZ_BUILD) $(srcdir)/fuzz/fuzz-decoder.c $(FUZZ_DECODER_SRC) \
		$(ZSTD_CFLAGS) $(ZSTD_LIBS)
fuzz/fuzz-stack-table: $(srcdir)/fuzz/fuzz-stack-table.c $(FUZZ_SYM_SRC) \
		$(FUZZ_H)
	$(FUZZ_BUILD) $(FUZZ_SYM_SAN) $(srcdir)/fuzz/fuzz-stack-table.c \
		$(FUZZ_SYM_SRC) -Wl,--wrap=open $(FUZZ_SYM_LIBS)
fuzz/fuzz-mappings: $(srcdir)/fuzz/fuzz-mappings.c $(FUZZ_SYM_SRC) $(FUZZ_H)
	$(FUZZ_BUILD) $(FUZZ_SYM_SAN) $(srcdir)/fuzz/fuzz-mappings.c \
		$(FUZZ_SYM_SRC) -Wl,--wrap=open $(FUZZ_SYM_LIBS)
FUZZ_REPLAY_SRC = $(srcdir)/plugins/replay/source.c \
	$(srcdir)/plugins/replay/json-event.c
fuzz/fuzz-jsonl: $(srcdir)/fuzz/fuzz-jsonl.c $(FUZZ_REPLAY_SRC) $(FUZZ_H)
	$(FUZZ_BUILD) -I$(srcdir)/plugins/replay $(srcdir)/fuzz/fuzz-jsonl.c \
		$(FUZZ_REPLAY_SRC)
fuzz/fuzz-report: $(srcdir)/fuzz/fuzz-report.c $(FUZZ_REPORT_SRC) \
		$(FUZZ_SYM_SRC) $(FUZZ_DECODER_SRC) $(FUZZ_H) \
		$(FUZZ_REPORT_GEN) $(FUZZ_REPORT_GEN_H)
	$(FUZZ_BUILD) $(FUZZ_SYM_SAN) $(srcdir)/fuzz/fuzz-report.c \
		$(FUZZ_REPORT_SRC) $(FUZZ_REPORT_GEN) $(FUZZ_SYM_SRC) \
		$(FUZZ_DECODER_SRC) -Wl,--wrap=open $(ZSTD_CFLAGS) \
		$(PROTOBUF_C_CFLAGS) $(ZLIB_CFLAGS) $(ZSTD_LIBS) \
		$(PROTOBUF_C_LIBS) $(ZLIB_LIBS) $(FUZZ_SYM_LIBS)

fuzz-build: $(FUZZ_TARGETS:%=fuzz/%)

# Each target from its seeds (read only) and a working corpus in the build
# tree that keeps what earlier runs found; findings go to fuzz/findings/.
fuzz: fuzz-build
	@failed=; for t in $(FUZZ_TARGETS); do \
		$(MKDIR_P) fuzz/work/$$t fuzz/findings/$$t || exit 1; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		if ! ./fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
			-rss_limit_mb=$(FUZZ_RSS_MB) -error_exitcode=1 \
			-timeout_exitcode=1 -print_final_stats=1 \
			-artifact_prefix=fuzz/findings/$$t/ \
			fuzz/work/$$t $(srcdir)/fuzz/corpus/$$t \
			> fuzz/$$t.log 2>&1; then \
			tail -n 60 fuzz/$$t.log; failed="$$failed $$t"; \
		else \
			grep -E '^stat::|^#[0-9]+.*DONE' fuzz/$$t.log | tr '\n' ' '; \
			echo; \
		fi; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed"; exit 1; fi

.PHONY: fuzz fuzz-build
clean-local: clean-fuzz
clean-fuzz:
	rm -rf fuzz/fuzz-decoder fuzz/fuzz-stack-table fuzz/fuzz-mappings \
		fuzz/fuzz-jsonl fuzz/fuzz-report fuzz/*.log fuzz/work \
		fuzz/findings
.PHONY: clean-fuzz

EXTRA_DIST += fuzz/KNOWN fuzz/fuzz-common.h fuzz/fuzz-sym.h fuzz/fuzz-zstd.h \
	fuzz/fuzz-decoder.c fuzz/fuzz-stack-table.c fuzz/fuzz-mappings.c \
	fuzz/fuzz-jsonl.c fuzz/fuzz-report.c fuzz/make-seeds.py fuzz/corpus
