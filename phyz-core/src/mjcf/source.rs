//! Reading model files: the main file and every file it `<include>`s, each parsed once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use roxmltree::{Document, Node};

use super::error::{Location, MjcfError, MjcfErrorKind};

/// The text of every file a model is made of, the main file first.
pub(super) struct Sources {
    files: Vec<(PathBuf, String)>,
}

/// Includes nested deeper than this are taken to be a cycle.
const MAX_INCLUDE_DEPTH: usize = 32;

/// The file an `<include file>` names, found as MuJoCo finds it: relative to the main model's
/// directory `base` if it is there, else relative to the directory of the including file.
fn resolve_include(base: &Path, including: &Path, name: &str) -> PathBuf {
    let from_main = base.join(name);
    if from_main.is_file() {
        return from_main;
    }
    including.parent().map_or(from_main.clone(), |dir| dir.join(name))
}

fn parse(text: &str) -> Result<Document<'_>, roxmltree::Error> {
    Document::parse(text)
}

pub(super) fn xml_error(file: &Path, e: &roxmltree::Error) -> MjcfError {
    let pos = e.pos();
    MjcfError {
        location: Location { file: file.to_path_buf(), line: pos.row, column: pos.col, element: String::new() },
        kind: MjcfErrorKind::Xml(e.to_string()),
    }
}

impl Sources {
    /// The main file `path`, or in-memory `text` named `path`, and everything it includes.
    pub(super) fn read(path: &Path, text: Option<String>) -> Result<Sources, MjcfError> {
        let main = match text {
            Some(t) => t,
            None => std::fs::read_to_string(path).map_err(|e| MjcfError {
                location: Location { file: path.to_path_buf(), line: 0, column: 0, element: String::new() },
                kind: MjcfErrorKind::Io(e.to_string()),
            })?,
        };
        let mut sources = Sources { files: vec![(path.to_path_buf(), main)] };
        let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let mut next = 0;
        while next < sources.files.len() {
            let includes = {
                let (file, text) = &sources.files[next];
                let doc = parse(text).map_err(|e| xml_error(file, &e))?;
                let mut found = Vec::new();
                for node in doc.descendants().filter(|n| n.has_tag_name("include")) {
                    let location = super::element::location(file, &node);
                    let name = node.attribute("file").ok_or_else(|| MjcfError {
                        location: location.clone(),
                        kind: MjcfErrorKind::Invalid("missing attribute `file`".into()),
                    })?;
                    found.push((resolve_include(&base, file, name), location));
                }
                found
            };
            for (path, location) in includes {
                if sources.files.iter().any(|(p, _)| *p == path) {
                    let message = format!("{} is included twice", path.display());
                    return Err(MjcfError { location, kind: MjcfErrorKind::Invalid(message) });
                }
                if sources.files.len() > MAX_INCLUDE_DEPTH * 8 {
                    return Err(MjcfError { location, kind: MjcfErrorKind::Invalid("too many included files".into()) });
                }
                let text = std::fs::read_to_string(&path).map_err(|e| MjcfError {
                    location: location.clone(),
                    kind: MjcfErrorKind::Io(format!("{}: {e}", path.display())),
                })?;
                sources.files.push((path, text));
            }
            next += 1;
        }
        Ok(sources)
    }

    /// Takes out of the text what an error at `location` is about — its `attribute` (on the
    /// element, else on the default classes of the element's group that set it) or the
    /// element — so that the rest of the model can be read. False when there is nothing to take.
    pub(super) fn without(&mut self, location: &Location, attribute: Option<&str>) -> bool {
        let mut cuts: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
        for (index, (path, text)) in self.files.iter().enumerate() {
            let Ok(doc) = parse(text) else { return false };
            let at = |node: &Node<'_, '_>| {
                let pos = doc.text_pos_at(node.range().start);
                *path == location.file && (pos.row, pos.col) == (location.line, location.column)
            };
            let Some(node) = doc.descendants().find(|n| n.is_element() && at(n)) else { continue };
            let Some(name) = attribute else {
                cuts.push((index, node.range()));
                break;
            };
            match node.attributes().find(|a| a.name() == name) {
                Some(attribute) => cuts.push((index, attribute.range())),
                None => cuts.extend(self.defaults_setting(node.tag_name().name(), name)),
            }
            break;
        }
        // Later ranges first, so that earlier ones keep their offsets.
        cuts.sort_by_key(|(file, range)| (*file, std::cmp::Reverse(range.start)));
        for (file, range) in &cuts {
            self.files[*file].1.replace_range(range.clone(), "");
        }
        !cuts.is_empty()
    }

    /// Where the default classes of `tag`'s group set `attribute`, as (file, byte range).
    fn defaults_setting(&self, tag: &str, attribute: &str) -> Vec<(usize, std::ops::Range<usize>)> {
        let group = super::defaults::group(tag);
        let mut out = Vec::new();
        for (index, (_, text)) in self.files.iter().enumerate() {
            let Ok(doc) = parse(text) else { continue };
            let in_defaults = |n: &Node<'_, '_>| n.parent().is_some_and(|p| p.has_tag_name("default"));
            for node in doc.descendants().filter(|n| n.is_element() && in_defaults(n)) {
                if group.is_some() && super::defaults::group(node.tag_name().name()) == group {
                    out.extend(node.attributes().filter(|a| a.name() == attribute).map(|a| (index, a.range())));
                }
            }
        }
        out
    }

    /// Every file parsed, with a map from include path to its document.
    pub(super) fn parse(&self) -> Result<Parsed<'_>, MjcfError> {
        let mut docs = Vec::new();
        for (path, text) in &self.files {
            docs.push((path.as_path(), parse(text).map_err(|e| xml_error(path, &e))?));
        }
        let index = self.files.iter().enumerate().map(|(i, (p, _))| (p.clone(), i)).collect();
        Ok(Parsed { docs, index, base: self.files[0].0.parent().unwrap_or(Path::new("")).to_path_buf() })
    }
}

/// The parsed documents of a model.
pub(super) struct Parsed<'a> {
    pub(super) docs: Vec<(&'a Path, Document<'a>)>,
    index: HashMap<PathBuf, usize>,
    base: PathBuf,
}

/// An element together with the file it came from.
#[derive(Clone, Copy)]
pub(super) struct Located<'a> {
    pub(super) node: Node<'a, 'a>,
    pub(super) file: &'a Path,
}

impl<'a> Parsed<'a> {
    /// The main model file's directory, which asset paths are relative to.
    pub(super) fn base(&self) -> &Path {
        &self.base
    }

    /// The root `<mujoco>` element of the main file.
    pub(super) fn root(&'a self) -> Located<'a> {
        let (file, doc) = &self.docs[0];
        Located { node: doc.root_element(), file }
    }

    /// The element children of `parent`, with each `<include>` replaced by the children of the
    /// included file's root, recursively.
    pub(super) fn children(&'a self, parent: Located<'a>) -> Vec<Located<'a>> {
        let mut out = Vec::new();
        self.expand(parent, &mut out, 0);
        out
    }

    fn expand(&'a self, parent: Located<'a>, out: &mut Vec<Located<'a>>, depth: usize) {
        for node in parent.node.children().filter(Node::is_element) {
            if node.has_tag_name("include") && depth < MAX_INCLUDE_DEPTH {
                let target = node.attribute("file").map(|f| resolve_include(&self.base, parent.file, f));
                if let Some(&i) = target.as_ref().and_then(|t| self.index.get(t)) {
                    let (file, doc) = &self.docs[i];
                    self.expand(Located { node: doc.root_element(), file }, out, depth + 1);
                }
            } else {
                out.push(Located { node, file: parent.file });
            }
        }
    }
}
