"""The handoff ledger: its line format and rules, the store's ledger file, and sync across
machines.

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
