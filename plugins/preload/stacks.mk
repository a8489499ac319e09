# plugins/preload/stacks.mk: the preload interposer's call stacks
# (in-process unwinding, the stack table, the mappings), a convenience
# library the interposer links. Compiled PIC (libtool), hidden: nothing of
# it is exported from the interposer.
noinst_LTLIBRARIES += plugins/preload/libmtpl-stacks.la
plugins_preload_libmtpl_stacks_la_SOURCES = \
	plugins/preload/interposer/stack-unwind.c \
	plugins/preload/interposer/stack-unwind.h \
	plugins/preload/interposer/stack-table.c \
	plugins/preload/interposer/stack-table.h \
	plugins/preload/interposer/stack-maps.c \
	plugins/preload/interposer/stack-maps.h plugins/preload/selfmap.h \
	plugins/preload/interposer/loader-walk.c \
	plugins/preload/interposer/loader-walk.h
plugins_preload_libmtpl_stacks_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(PRELOAD_INTERPOSER_CPPFLAGS)
plugins_preload_libmtpl_stacks_la_CFLAGS = $(AM_CFLAGS) $(LIBUNWIND_CFLAGS) \
	-fvisibility=hidden
# libunwind itself is opened with dlopen (stack-unwind.c says why)
plugins_preload_libmtpl_stacks_la_LIBADD = -ldl
