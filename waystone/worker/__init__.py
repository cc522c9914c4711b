"""The worker edge: the sync and async workers and the cron ticker."""
