"""The estimators: the template fit, the valuators, semivalues, the public
model and the filters. Imports every layer below it.
"""
