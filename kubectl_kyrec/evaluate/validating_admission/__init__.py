"""ValidatingAdmissionPolicy with its bindings (kk: pkg/admissionpolicy): the engine and explain's tree."""
