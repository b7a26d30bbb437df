"""Corrections and warnings as rules, and what an action means (its concepts and the built-in
guards).

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
