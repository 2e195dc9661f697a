//! relayout
