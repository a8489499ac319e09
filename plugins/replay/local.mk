# plugins/replay
