//! Slots with generations: an index stays valid for one occupant only.

/// A slot vector with a free list; each slot's generation changes when it is freed.
pub struct Slab<T> {
    items: Vec<Option<T>>,
    gens: Vec<u32>,
    free: Vec<usize>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            gens: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    /// Stores `v`; returns its slot and generation.
    pub fn insert(&mut self, v: T) -> (usize, u32) {
        self.len += 1;
        if let Some(i) = self.free.pop() {
            self.items[i] = Some(v);
            (i, self.gens[i])
        } else {
            self.items.push(Some(v));
            self.gens.push(0);
            (self.items.len() - 1, 0)
        }
    }

    /// The occupant of slot `i` if its generation is `gen`.
    pub fn get(&mut self, i: usize, gen: u32) -> Option<&mut T> {
        if self.gens.get(i) != Some(&gen) {
            return None;
        }
        self.items.get_mut(i)?.as_mut()
    }

    /// The occupant of slot `i`, whatever its generation.
    pub fn at(&mut self, i: usize) -> Option<&mut T> {
        self.items.get_mut(i)?.as_mut()
    }

    /// The occupant of slot `i`, read-only.
    pub fn peek(&self, i: usize) -> Option<&T> {
        self.items.get(i)?.as_ref()
    }

    /// The occupant of slot `i` if its generation is `gen`, read-only.
    pub fn peek_gen(&self, i: usize, gen: u32) -> Option<&T> {
        if self.gens.get(i) != Some(&gen) {
            return None;
        }
        self.items.get(i)?.as_ref()
    }

    /// The current generation of slot `i`.
    pub fn gen(&self, i: usize) -> u32 {
        self.gens.get(i).copied().unwrap_or(u32::MAX)
    }

    /// Removes the occupant of slot `i`.
    pub fn remove(&mut self, i: usize) -> Option<T> {
        let v = self.items.get_mut(i)?.take()?;
        self.gens[i] = self.gens[i].wrapping_add(1);
        self.free.push(i);
        self.len -= 1;
        Some(v)
    }

    /// Occupied slots.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Every occupant with its slot.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (usize, &mut T)> {
        self.items
            .iter_mut()
            .enumerate()
            .filter_map(|(i, v)| v.as_mut().map(|v| (i, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations() {
        let mut s = Slab::default();
        let (i, g) = s.insert(1);
        assert_eq!(s.get(i, g), Some(&mut 1));
        s.remove(i);
        let (j, g2) = s.insert(2);
        assert_eq!(i, j);
        assert!(s.get(i, g).is_none());
        assert_eq!(s.get(j, g2), Some(&mut 2));
        assert_eq!(s.len(), 1);
    }
}
