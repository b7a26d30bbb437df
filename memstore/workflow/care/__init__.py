"""Keeping a store true: stewardship, lint, tidying, the timeline, outcomes' figures, porting.

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
