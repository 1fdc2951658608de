"""The benchmark: episode runner, statistics, leaderboard and promotion gate."""
