# man: the pages of the command, its subcommands and the plugin ABI.
# tests/test-manpages.sh checks each option list against --help.
dist_man_MANS = man/memtrack.1 man/memtrack-report.1 man/memtrack-dump.1 \
	man/memtrack-plugins.1 man/memtrack-plugin.7

TESTS += tests/test-manpages.sh
dist_noinst_SCRIPTS += tests/test-manpages.sh
