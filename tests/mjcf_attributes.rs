//! Every attribute the MJCF loader accepts has its row in `docs/mjcf.md`, with the treatment
//! the loader gives it, and every row there is an attribute the loader accepts.

use std::collections::BTreeSet;

use phyz::mjcf;

/// The rows of the table under `## Every accepted attribute`: (element, attribute, treatment).
fn documented() -> BTreeSet<(String, String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mjcf.md");
    let text = std::fs::read_to_string(path).expect("docs/mjcf.md is readable");
    let section = text.split("## Every accepted attribute").nth(1).expect("the section exists");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| element"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[2].to_string(), cells[3].to_string())
        })
        .collect()
}

#[test]
fn every_accepted_attribute_has_its_row_in_the_docs() {
    let accepted: BTreeSet<(String, String, String)> = mjcf::accepted_attributes()
        .map(|(element, attribute, treatment)| (element.into(), attribute.into(), treatment.word().into()))
        .collect();
    let documented = documented();
    let missing: Vec<_> = accepted.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&accepted).collect();
    assert!(missing.is_empty(), "accepted but not in docs/mjcf.md (or with another treatment): {missing:?}");
    assert!(stale.is_empty(), "in docs/mjcf.md but not accepted so: {stale:?}");
    assert!(accepted.len() > 300, "the table has {} rows", accepted.len());
}
