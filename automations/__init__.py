"""Rooms and scenes (issue 27): what ties lights, sensor zones and agents together, and named
sets of light states with optional tool calls, run through the one tool-call pipeline. The
automations engine is not built yet."""
