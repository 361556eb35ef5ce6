// phyz's trajectory player: builds the model's geoms with three.js and poses them frame by
// frame. Everything comes from the page itself (no network): three.js and its orbit controls
// are loaded from the page's text as module URLs, the trajectory from its JSON.
//
// The page reports itself on <body>: data-status is "ready" once the first frame is drawn,
// data-errors lists whatever went wrong (a browser test reads both).

const errors = [];
function fail(message) {
  errors.push(String(message));
  document.body.dataset.errors = errors.join('\n');
  document.getElementById('errors').textContent = errors.join('\n');
}
window.addEventListener('error', (event) => fail(event.message));
window.addEventListener('unhandledrejection', (event) => fail(event.reason));
const consoleError = console.error.bind(console);
console.error = (...args) => { fail(args.join(' ')); consoleError(...args); };

const text = (id) => document.getElementById(id).textContent;
const moduleUrl = (source) => URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));

try {
  const threeUrl = moduleUrl(text('phyz-three'));
  const THREE = await import(threeUrl);
  const orbit = text('phyz-orbit').replace(/from\s*['"]three['"]/, `from '${threeUrl}'`);
  const { OrbitControls } = await import(moduleUrl(orbit));
  start(THREE, OrbitControls, JSON.parse(text('phyz-data')));
} catch (error) {
  fail(error && error.stack ? error.stack : error);
}

function start(THREE, OrbitControls, data) {
  const host = document.getElementById('view');
  const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio);
  host.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0xdde3ea);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x667788, 1.6));
  const sun = new THREE.DirectionalLight(0xffffff, 1.8);
  sun.position.set(3, -4, 8);
  scene.add(sun);

  // MuJoCo's frame: z up.
  const camera = new THREE.PerspectiveCamera(45, 1, 0.01, 2000);
  camera.up.set(0, 0, 1);
  const controls = new OrbitControls(camera, renderer.domElement);

  // A group for every drawn body, shown or not, so that the frames' rows line up.
  const bodies = Array.from({ length: data.bodies }, () => {
    const group = new THREE.Group();
    scene.add(group);
    return group;
  });
  for (const geom of data.geoms) {
    // MuJoCo's viewer draws groups 0 to 2, and nothing fully transparent.
    if (geom.group > 2 || geom.rgba[3] === 0) continue;
    const mesh = new THREE.Mesh(geometry(THREE, geom), material(THREE, geom));
    mesh.position.fromArray(geom.pos);
    const [w, x, y, z] = geom.quat;
    mesh.quaternion.set(x, y, z, w);
    mesh.userData.kind = geom.kind;
    bodies[geom.body].add(mesh);
  }

  const frames = data.times.length;
  const stride = 7 * bodies.length;
  const pose = (index) => {
    const row = data.poses.slice(index * stride, (index + 1) * stride);
    bodies.forEach((group, slot) => {
      const at = 7 * slot;
      group.position.set(row[at], row[at + 1], row[at + 2]);
      group.quaternion.set(row[at + 4], row[at + 5], row[at + 6], row[at + 3]);
    });
  };

  // Frame the first pose: everything but the planes, seen from the front and a little above.
  pose(0);
  scene.updateMatrixWorld(true);
  const box = new THREE.Box3();
  scene.traverse((object) => {
    if (object.isMesh && object.userData.kind !== 'plane') box.expandByObject(object);
  });
  const centre = box.isEmpty() ? new THREE.Vector3() : box.getCenter(new THREE.Vector3());
  const radius = box.isEmpty() ? 1 : Math.max(box.getSize(new THREE.Vector3()).length() / 2, 0.1);
  controls.target.copy(centre);
  camera.position.copy(centre).add(new THREE.Vector3(1.2, -2.2, 1.0).normalize().multiplyScalar(3 * radius));
  camera.near = radius / 100;
  camera.updateProjectionMatrix();
  controls.update();

  const slider = document.getElementById('time');
  const clock = document.getElementById('clock');
  const play = document.getElementById('play');
  const speed = document.getElementById('speed');
  const follow = document.getElementById('follow');
  slider.max = String(frames - 1);
  follow.checked = data.follow !== null;
  follow.disabled = data.follow === null;
  const first = data.times[0];
  const span = data.times[frames - 1] - first;

  let frame = 0;
  let playing = false;
  let time = first;
  // Where the followed body was when the camera last moved with it.
  const followed = data.follow === null ? new THREE.Vector3() : bodies[data.follow].position.clone();
  const show = (index) => {
    frame = index;
    pose(index);
    slider.value = String(index);
    clock.textContent = `t = ${data.times[index].toFixed(3)} s of ${span.toFixed(3)} s`;
    if (follow.checked && data.follow !== null) {
      // Carry the camera with the followed body across the ground, not up and down.
      const now = bodies[data.follow].position;
      const shift = new THREE.Vector3(now.x - followed.x, now.y - followed.y, 0);
      camera.position.add(shift);
      controls.target.add(shift);
    }
    if (data.follow !== null) followed.copy(bodies[data.follow].position);
  };
  // The last frame at or before time `t`.
  const frameAt = (t) => {
    let lo = 0;
    let hi = frames - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (data.times[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  };
  const setPlaying = (on) => {
    playing = on && frames > 1;
    play.textContent = playing ? 'Pause' : 'Play';
  };
  play.addEventListener('click', () => {
    if (!playing && frame === frames - 1) time = first;
    setPlaying(!playing);
  });
  slider.addEventListener('input', () => {
    setPlaying(false);
    show(Number(slider.value));
    time = data.times[frame];
  });
  window.addEventListener('keydown', (event) => {
    if (event.code === 'Space') { event.preventDefault(); play.click(); }
  });

  const resize = () => {
    const { clientWidth: width, clientHeight: height } = host;
    renderer.setSize(width, height);
    camera.aspect = width / Math.max(height, 1);
    camera.updateProjectionMatrix();
  };
  window.addEventListener('resize', resize);
  resize();
  // `#frame=K` opens the page at frame K (clamped; `last` for the last).
  const asked = /frame=(\d+|last)/.exec(window.location.hash);
  const opening = asked ? (asked[1] === 'last' ? frames - 1 : Math.min(Number(asked[1]), frames - 1)) : 0;
  show(opening);
  time = data.times[opening];

  let last = performance.now();
  renderer.setAnimationLoop((now) => {
    const elapsed = (now - last) / 1000;
    last = now;
    if (playing) {
      time += elapsed * Number(speed.value);
      if (time >= first + span) {
        time = first + span;
        setPlaying(false);
      }
      const next = frameAt(time);
      if (next !== frame) show(next);
    }
    controls.update();
    renderer.render(scene, camera);
    document.body.dataset.frame = String(frame);
    if (document.body.dataset.status !== 'ready') {
      document.body.dataset.status = 'ready';
      document.body.dataset.frames = String(frames);
      document.body.dataset.meshes = String(scene.children.reduce((n, g) => n + (g.isGroup ? g.children.length : 0), 0));
    }
  });
}

// A geom's shape in its own frame. three.js builds capsules and cylinders along y; MuJoCo's
// run along z.
function geometry(THREE, geom) {
  const [a, b, c] = geom.size;
  switch (geom.kind) {
    case 'sphere': return new THREE.SphereGeometry(a, 32, 16);
    case 'capsule': return new THREE.CapsuleGeometry(a, 2 * b, 8, 24).rotateX(Math.PI / 2);
    case 'cylinder': return new THREE.CylinderGeometry(a, a, 2 * b, 32).rotateX(Math.PI / 2);
    case 'box': return new THREE.BoxGeometry(2 * a, 2 * b, 2 * c);
    case 'ellipsoid': return new THREE.SphereGeometry(1, 32, 16).scale(a, b, c);
    // An endless plane is drawn 100 m across.
    case 'plane': return new THREE.PlaneGeometry(2 * (a > 0 ? a : 50), 2 * (b > 0 ? b : 50));
    case 'mesh':
    case 'hfield': {
      const shape = new THREE.BufferGeometry();
      shape.setAttribute('position', new THREE.Float32BufferAttribute(geom.vertices, 3));
      shape.setIndex(geom.triangles);
      // Flat faces: a hull's polygons are flat.
      const flat = shape.toNonIndexed();
      flat.computeVertexNormals();
      return flat;
    }
    default: throw new Error(`geom ${geom.name}: unknown kind ${geom.kind}`);
  }
}

// The geom's colour; a plane gets a checker at its grid spacing, so motion over it shows.
function material(THREE, geom) {
  const [r, g, b, a] = geom.rgba;
  const colour = new THREE.Color().setRGB(r, g, b, THREE.SRGBColorSpace);
  const options = { color: colour, roughness: 0.75, metalness: 0.05, transparent: a < 1, opacity: a };
  if (geom.kind === 'plane') {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 64;
    const paint = canvas.getContext('2d');
    paint.fillStyle = '#ffffff';
    paint.fillRect(0, 0, 64, 64);
    paint.fillStyle = '#c8cdd3';
    paint.fillRect(0, 0, 32, 32);
    paint.fillRect(32, 32, 32, 32);
    const texture = new THREE.CanvasTexture(canvas);
    texture.colorSpace = THREE.SRGBColorSpace;
    texture.wrapS = texture.wrapT = THREE.RepeatWrapping;
    // Squares of the grid's spacing where that is a walkable size, else of a metre.
    const [x, y, spacing] = geom.size;
    const cell = 2 * (spacing > 0 && spacing <= 2 ? spacing : 0.5);
    texture.repeat.set(2 * (x > 0 ? x : 50) / cell, 2 * (y > 0 ? y : 50) / cell);
    Object.assign(options, { map: texture, side: THREE.DoubleSide });
  }
  return new THREE.MeshStandardMaterial(options);
}
