"""Generalist-specialist learning (GSL): the plateau evaluator that ends a phase and the phases' pieces."""
