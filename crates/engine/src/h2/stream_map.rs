//! Stream id → slot map of an HTTP/2 session (allocated once per connection).

/// Stream id → slot, open addressing with linear probing (capacity a power
/// of two ≥ 2 × max streams; allocated once per connection).
#[derive(Debug)]
pub(super) struct StreamMap {
    /// `(stream id, slot)`; id 0 = empty.
    table: Box<[(u32, u32)]>,
    mask: usize,
    pub(super) len: usize,
}

impl StreamMap {
    pub(super) fn new(max: u32) -> StreamMap {
        let cap = (max as usize).saturating_mul(2).max(8).next_power_of_two();
        StreamMap {
            table: vec![(0, 0); cap].into_boxed_slice(),
            mask: cap - 1,
            len: 0,
        }
    }

    #[inline]
    pub(super) fn home(&self, id: u32) -> usize {
        // Client stream ids are odd and sequential: (id >> 1) spreads them.
        (id as usize >> 1) & self.mask
    }

    pub(super) fn insert(&mut self, id: u32, slot: u32) -> bool {
        if self.len + 1 > self.table.len() / 2 {
            return false;
        }
        let mut i = self.home(id);
        loop {
            let Some(e) = self.table.get_mut(i) else {
                return false;
            };
            if e.0 == 0 || e.0 == id {
                if e.0 == 0 {
                    self.len += 1;
                }
                *e = (id, slot);
                return true;
            }
            i = (i + 1) & self.mask;
        }
    }

    pub(super) fn get(&self, id: u32) -> Option<u32> {
        let mut i = self.home(id);
        loop {
            match self.table.get(i) {
                Some(&(0, _)) | None => return None,
                Some(&(k, v)) if k == id => return Some(v),
                _ => i = (i + 1) & self.mask,
            }
        }
    }

    pub(super) fn remove(&mut self, id: u32) -> Option<u32> {
        let mut i = self.home(id);
        let v = loop {
            match self.table.get(i) {
                Some(&(0, _)) | None => return None,
                Some(&(k, v)) if k == id => break v,
                _ => i = (i + 1) & self.mask,
            }
        };
        // Backward-shift deletion keeps probe chains intact without tombstones.
        let mut hole = i;
        let mut j = (i + 1) & self.mask;
        while let Some(&(k, val)) = self.table.get(j) {
            if k == 0 {
                break;
            }
            let h = self.home(k);
            // Move (k) into the hole if its home is not in (hole, j].
            let between = if hole <= j {
                hole < h && h <= j
            } else {
                hole < h || h <= j
            };
            if !between {
                if let Some(e) = self.table.get_mut(hole) {
                    *e = (k, val);
                }
                hole = j;
            }
            j = (j + 1) & self.mask;
        }
        if let Some(e) = self.table.get_mut(hole) {
            *e = (0, 0);
        }
        self.len -= 1;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_map_insert_get_remove() {
        let mut m = StreamMap::new(4);
        for (i, id) in [1u32, 3, 5, 7].iter().enumerate() {
            assert!(m.insert(*id, i as u32));
        }
        assert_eq!(m.get(5), Some(2));
        assert_eq!(m.remove(3), Some(1));
        assert_eq!(m.get(3), None);
        assert_eq!(m.get(7), Some(3));
        // Ids that collide in the table (same home modulo capacity).
        let mut m = StreamMap::new(4); // capacity 8
        for (slot, id) in [1u32, 17, 33, 49].iter().enumerate() {
            assert!(m.insert(*id, slot as u32));
        }
        assert_eq!(m.remove(17), Some(1));
        assert_eq!(
            (m.get(1), m.get(33), m.get(49)),
            (Some(0), Some(2), Some(3))
        );
        assert_eq!(m.remove(1), Some(0));
        assert_eq!((m.get(33), m.get(49)), (Some(2), Some(3)));
        assert!(!m.insert(51, 9) || m.len <= 4);
    }

    #[test]
    fn stream_map_matches_a_model() {
        use std::collections::HashMap;
        let mut m = StreamMap::new(16);
        let mut model = HashMap::new();
        let mut next = 1u32;
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if (x >> 33) % 2 == 0 && model.len() < 16 {
                assert!(m.insert(next, next * 3));
                model.insert(next, next * 3);
                next += 2;
            } else if let Some(&k) = model.keys().nth(((x >> 40) as usize) % model.len().max(1)) {
                assert_eq!(m.remove(k), model.remove(&k));
            }
            for (k, v) in &model {
                assert_eq!(m.get(*k), Some(*v));
            }
            assert_eq!(m.len, model.len());
        }
    }
}
