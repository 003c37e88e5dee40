"""The op layer: each family's forward and backward side by side (the derivative table), over
the array backend; the Tensor methods and the torch namespace call these."""
