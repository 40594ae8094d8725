//! Sweeps of many seeds (filled in below).
