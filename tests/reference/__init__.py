"""Deliberately plain implementations of the spec, written independently of the package.

Tests and benchmarks compare the package against these; they use no package code except
input conversion, so an error in the package cannot hide in its own oracle.
"""
