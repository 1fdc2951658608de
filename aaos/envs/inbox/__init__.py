"""The Support Inbox: one triage agent classifies, prioritises and closes a support inbox (aaos.envs.inbox.kit)."""
