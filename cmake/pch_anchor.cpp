// Anchor translation unit for the shared LibTorch precompiled header (tfg_torch_pch).
