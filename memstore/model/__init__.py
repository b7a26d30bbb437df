"""Values and pure text: a memory, its fields and identities, its YAML, its status, the
moments people type, text for agents.

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
