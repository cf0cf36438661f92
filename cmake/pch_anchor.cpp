// Empty translation unit: gives the triax_pch target something to compile its PCH with.
