//! Boxes of tensor elements (one half-open range per index) and their difference, which
//! `split-guards` uses to shrink a fill to the elements no later statement overwrites.

use relayout_ir::DimRange;

/// One half-open range per index of a tensor.
pub(crate) type IndexBox = Vec<DimRange>;

fn intersects(a: &[DimRange], b: &[DimRange]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.lo < y.hi && y.lo < x.hi && !x.is_empty() && !y.is_empty())
}

/// `a` minus `b`, as disjoint non-empty boxes. The pieces are cut along the first index first,
/// so they are slabs that are as contiguous in row-major order as the difference allows. `a`
/// is taken by value: when `b` misses it, it is the result as it is, not a copy.
pub(crate) fn subtract(a: IndexBox, b: &[DimRange]) -> Vec<IndexBox> {
    if !intersects(&a, b) {
        return vec![a];
    }
    let mut out = Vec::new();
    let mut rest = a;
    for i in 0..rest.len() {
        let (lo, hi) = (rest[i].lo, rest[i].hi);
        if lo < b[i].lo {
            let mut piece = rest.clone();
            piece[i] = DimRange::new(lo, b[i].lo);
            out.push(piece);
        }
        if b[i].hi < hi {
            let mut piece = rest.clone();
            piece[i] = DimRange::new(b[i].hi, hi);
            out.push(piece);
        }
        rest[i] = DimRange::new(lo.max(b[i].lo), hi.min(b[i].hi));
    }
    // What is left of `rest` lies inside `b`.
    out
}

/// Merges boxes that are equal in every index but one, where they are adjacent, until no two
/// can be merged. The union is unchanged.
pub(crate) fn merge_adjacent(mut boxes: Vec<IndexBox>) -> Vec<IndexBox> {
    'again: loop {
        for i in 0..boxes.len() {
            for j in 0..boxes.len() {
                if i != j {
                    if let Some(m) = merged(&boxes[i], &boxes[j]) {
                        boxes[i] = m;
                        boxes.remove(j);
                        continue 'again;
                    }
                }
            }
        }
        return boxes;
    }
}

/// `a` and `b` as one box, when `b` continues `a` along exactly one index.
fn merged(a: &[DimRange], b: &[DimRange]) -> Option<IndexBox> {
    if a.len() != b.len() {
        return None;
    }
    // The one index where they differ, without collecting them all (merge_adjacent asks
    // this of every pair of boxes).
    let mut differing = (0..a.len()).filter(|&i| a[i] != b[i]);
    let (Some(i), None) = (differing.next(), differing.next()) else {
        return None;
    };
    (a[i].hi == b[i].lo).then(|| {
        let mut m = a.to_vec();
        m[i].hi = b[i].hi;
        m
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bx(r: &[(i64, i64)]) -> IndexBox {
        r.iter().map(|&(a, b)| DimRange::new(a, b)).collect()
    }

    fn count(boxes: &[IndexBox]) -> u64 {
        boxes
            .iter()
            .map(|b| b.iter().map(DimRange::len).product::<u64>())
            .sum()
    }

    #[test]
    fn subtract_leaves_a_ring() {
        let ring = subtract(bx(&[(0, 6), (0, 6)]), &bx(&[(1, 5), (1, 5)]));
        assert_eq!(count(&ring), 36 - 16);
        assert_eq!(ring.len(), 4);
        assert_eq!(subtract(bx(&[(0, 2)]), &bx(&[(2, 4)])), vec![bx(&[(0, 2)])]);
        assert!(subtract(bx(&[(0, 2)]), &bx(&[(0, 4)])).is_empty());
    }

    #[test]
    fn merge_joins_neighbours() {
        let m = merge_adjacent(vec![bx(&[(2, 4), (0, 3)]), bx(&[(0, 2), (0, 3)])]);
        assert_eq!(m, vec![bx(&[(0, 4), (0, 3)])]);
    }
}
