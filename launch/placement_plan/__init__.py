"""Expert placement planning (issue 13): from recorded routing to a predicted, relaunched and measured placement.

recording (dumps in) → strategies (the exact placement rules) → prediction (hit rate, decode speed, VRAM,
stability) → profile_file (the counts the engine reads back) → report / cli; ab replays the same traffic
before and after a relaunch on the simulated engine.
"""
