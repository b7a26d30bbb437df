"""The search index and the recall pipeline: analysis, the Whoosh index, ranking, fusion, keeping
it in step.

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
