"""Kernels written for one array library (NumPy on the CPU); ``ember.ops`` stays written
against the array module of its tensors' device and calls these for NumPy data."""
