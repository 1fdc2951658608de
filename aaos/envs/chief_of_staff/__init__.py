"""The Chief of Staff Arena: one chief of staff runs a principal's calendar through weeks of contradictory
requests, hidden preference drift and trust that moves with a delay (aaos.envs.chief_of_staff.kit:KIT)."""
