# plugins/file
