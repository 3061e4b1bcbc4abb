// The live view page's script: shows the MJPEG stream, reads each frame's JSON from the
// server-sent events (FPS, per-stage latency, detections), and sends the sliders' settings.
extension LivePage {
    static let script = """
        'use strict';
        const key = new URLSearchParams(location.search).get('api_key');
        const query = key ? '?api_key=' + encodeURIComponent(key) : '';
        const auth = key ? { Authorization: 'Bearer ' + key } : {};
        const $ = (id) => document.getElementById(id);
        const stageNames = ['decode', 'preprocess', 'inference', 'postprocess', 'draw', 'encode'];
        let editing = 0, pending = null;

        $('video').src = 'video.mjpg' + query;

        function showSettings(s) {
          if (Date.now() < editing) return;
          $('thresh').value = s.thresh; $('thresh-value').textContent = Number(s.thresh).toFixed(2);
          $('nms').value = s.nms; $('nms-value').textContent = Number(s.nms).toFixed(2);
          if (document.activeElement !== $('classes')) $('classes').value = s.classes ? s.classes.join(',') : '';
          $('agnostic').checked = s.agnostic;
        }

        function send() {
          const body = new URLSearchParams({ thresh: $('thresh').value, nms: $('nms').value,
                                             classes: $('classes').value, agnostic: $('agnostic').checked ? '1' : '0' });
          fetch('settings', { method: 'POST', headers: auth, body })
            .then((r) => r.json())
            .then((s) => { if (s.success === false) { $('state').textContent = s.error; } else { $('state').textContent = ''; } });
        }

        function changed() {
          editing = Date.now() + 1500;
          $('thresh-value').textContent = Number($('thresh').value).toFixed(2);
          $('nms-value').textContent = Number($('nms').value).toFixed(2);
          clearTimeout(pending);
          pending = setTimeout(send, 60);
        }
        for (const id of ['thresh', 'nms']) $(id).addEventListener('input', changed);
        $('classes').addEventListener('change', changed);
        $('agnostic').addEventListener('change', changed);

        fetch('settings' + query, { headers: auth }).then((r) => r.json()).then((s) => {
          showSettings(s);
          for (const name of s.class_names || []) {
            const o = document.createElement('option'); o.value = name; $('class-names').appendChild(o);
          }
        });

        function render(f) {
          $('fps').textContent = f.fps.toFixed(1);
          $('stages').replaceChildren(...stageNames.map((n) => {
            const tr = document.createElement('tr');
            tr.innerHTML = '<td></td><td></td>';
            tr.cells[0].textContent = n;
            tr.cells[1].textContent = f.timing_ms[n].toFixed(1) + ' ms';
            return tr;
          }));
          $('count').textContent = f.detections.length;
          $('count').dataset.count = f.detections.length;
          $('count').dataset.thresh = f.settings.thresh;
          $('frame').textContent = 'frame ' + f.frame + (f.dropped ? ', ' + f.dropped + ' dropped' : '');
          $('detections').replaceChildren(...f.detections.map((d) => {
            const li = document.createElement('li');
            const b = d.box;
            li.textContent = d.class + ' ' + (d.confidence * 100).toFixed(0) + '% ';
            const span = document.createElement('span');
            span.textContent = [b.left, b.top, b.right, b.bottom].map((v) => Math.round(v)).join(', ');
            li.appendChild(span);
            return li;
          }));
          showSettings(f.settings);
        }

        const events = new EventSource('events' + query);
        events.onmessage = (e) => { $('state').textContent = ''; render(JSON.parse(e.data)); };
        events.onerror = () => { $('state').textContent = 'the live source has ended or the server is unreachable'; };
        """
}
