# The quick start's demo workload.
noinst_PROGRAMS += demo/memtrack-demo
demo_memtrack_demo_SOURCES = demo/memtrack-demo.c
demo_memtrack_demo_CFLAGS = $(AM_CFLAGS)
demo_memtrack_demo_LDADD = $(PTHREAD_LIBS)
