# plugins/preload: the preload source and the interposer it puts in the
# command's LD_PRELOAD (installed in pkglibdir, found next to the plugin in
# the build tree).
PRELOAD_COMMON = plugins/preload/shm.h plugins/preload/ring.c \
	plugins/preload/ring.h plugins/preload/execcheck.c \
	plugins/preload/execcheck.h

plugin_LTLIBRARIES += plugins/source-preload.la
plugins_source_preload_la_SOURCES = plugins/preload/source.c $(PRELOAD_COMMON) \
	plugins/preload/meta.c plugins/preload/meta.h
plugins_source_preload_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DMT_PRELOAD_LIBDIR='"$(pkglibdir)"'
plugins_source_preload_la_CFLAGS = $(MT_MODULE_CFLAGS)
plugins_source_preload_la_LDFLAGS = $(MT_MODULE_FLAGS)
plugins_source_preload_la_LIBADD = -ldl

# Not a plugin (no entry point): the hooks are its only exported symbols.
# -fexceptions: the real operator new may throw through our wrapper.
pkglib_LTLIBRARIES = plugins/preload/libmemtrack-preload.la
plugins_preload_libmemtrack_preload_la_SOURCES = plugins/preload/interpose.c \
	plugins/preload/hooks.def $(PRELOAD_COMMON) \
	plugins/preload/interpose-stacks.c plugins/preload/interpose-stacks.h \
	plugins/preload/meta.h
plugins_preload_libmemtrack_preload_la_CFLAGS = $(AM_CFLAGS) \
	-fvisibility=hidden -fexceptions -fno-builtin
plugins_preload_libmemtrack_preload_la_LDFLAGS = -module -avoid-version \
	-shared
# --stacks: libunwind is linked, but initialised only with stacks on
plugins_preload_libmemtrack_preload_la_LIBADD = \
	plugins/preload/libmtpl-stacks.la -ldl
