# tests/sanitize.mk: a build with sanitizers in CFLAGS (CI's build-asan and
# build-tsan: -fsanitize=...) instruments memtrack, its plugins and the
# tests, not what memtrack traces.
#
# - The interposer (libmemtrack-preload.so, and the stack code it links)
#   runs inside the traced programs, LD_PRELOADed: ASan's runtime must come
#   first in a process, so an instrumented interposer cannot load in any
#   program that is not itself built with ASan ("ASan runtime does not come
#   first in initial library list"), Debian's included.
# - The traced test programs (tests/progs/) and the quick start's demo
#   (demo/) are the subjects: built with ASan their allocations go to
#   ASan's allocator, not to the allocators whose calls the tests count,
#   the interposer would come before ASan's runtime in them, and their
#   stacks would be ASan's interceptors (whose C++ names made the report
#   dlopen libstdc++ to demangle them, which LeakSanitizer then saw
#   leak 88 bytes in ld.so in some runs: test-lifecycle, CI).
# So these are built without -fsanitize=..., whatever CFLAGS and LDFLAGS
# say; in a normal build this changes nothing.
MT_NOSAN_PATTERNS = tests/progs/% demo/% plugins/preload/libmemtrack_preload_la-% \
	plugins/preload/interposer/libmemtrack_preload_la-% \
	plugins/preload/interposer/libmtpl_stacks_la-%
MT_NOSAN_LIBS = plugins/preload/libmemtrack-preload.la \
	plugins/preload/libmtpl-stacks.la
$(MT_NOSAN_PATTERNS): CFLAGS := $(filter-out -fsanitize=%,$(CFLAGS))
$(MT_NOSAN_PATTERNS): CXXFLAGS := $(filter-out -fsanitize=%,$(CXXFLAGS))
$(MT_NOSAN_PATTERNS): LDFLAGS := $(filter-out -fsanitize=%,$(LDFLAGS))
$(MT_NOSAN_LIBS): CFLAGS := $(filter-out -fsanitize=%,$(CFLAGS))
$(MT_NOSAN_LIBS): LDFLAGS := $(filter-out -fsanitize=%,$(LDFLAGS))
# libtool's configure checks ran with the sanitizers and found static
# linking impossible, so -all-static links alloc-static dynamically there
# (and the tests of static programs fail): ask the compiler itself.
# (Targets through variables: automake would take a rule naming one of its
# programs for a replacement of its own rule.)
MT_STATIC_PROGS = tests/progs/alloc-static$(EXEEXT) \
	tests/progs/sample-mix-static$(EXEEXT)
$(MT_STATIC_PROGS): LDFLAGS := $(filter-out -fsanitize=%,$(LDFLAGS)) \
	-Xcompiler -static
