"""An agent's session: saving and checking as it works, the briefing at its start, closing at its
end.

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
