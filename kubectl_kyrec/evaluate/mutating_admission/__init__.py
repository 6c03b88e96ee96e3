"""MutatingAdmissionPolicy with its bindings and params (Kubernetes' in-tree mutating admission): the engine and
explain's tree.
"""
